/// A value looked for on first use and kept, found or not, until `reset()` says to look again
/// (an interpreter's frame reader: looked for when a process is first sampled, again after an
/// exec).
struct LookedForOnce<Value> {
    private var lookedFor = false
    /// What the last look found; nil also before the first look.
    private(set) var found: Value?

    mutating func get(_ look: () -> Value?) -> Value? {
        if !lookedFor {
            lookedFor = true
            found = look()
        }
        return found
    }

    mutating func reset() {
        lookedFor = false
        found = nil
    }
}
