import Testing

/// `expected` appears in `names` in this order (a stack's frames, innermost first), not
/// necessarily adjacent: what the dump and unwinding tests ask of a real program's stack.
func expectSubsequence(_ expected: [String], of names: [String], sourceLocation: SourceLocation = #_sourceLocation) {
    var remaining = names[...]
    for name in expected {
        guard let index = remaining.firstIndex(of: name) else {
            Issue.record("\(name) missing or out of order in \(names)", sourceLocation: sourceLocation)
            return
        }
        remaining = remaining[(index + 1)...]
    }
}
