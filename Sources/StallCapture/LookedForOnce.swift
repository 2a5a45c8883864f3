/// A value looked for on first use and kept, found or not, until `reset()` says to look again
/// (an interpreter's frame reader: looked for when a process is first sampled, again after an
/// exec; Ruby's symbol table, found once in libruby's data).
package struct LookedForOnce<Value> {
    private var lookedFor = false
    /// What the last look found; nil also before the first look.
    package private(set) var found: Value?

    package init() {}

    package mutating func get(_ look: () -> Value?) -> Value? {
        if !lookedFor {
            lookedFor = true
            found = look()
        }
        return found
    }

    package mutating func reset() {
        lookedFor = false
        found = nil
    }
}
