/// An interpreter's call chain read with the target running (the PHP and Ruby readers): a call
/// returning meanwhile changes it, so it is read until two reads in a row agree, from the
/// outermost call in, on every call but one innermost call at most (a loop calling one of the
/// runtime's own functions, `microtime()` or `Time.now`, enters and leaves it between reads).
/// At most four reads; the last one is kept.
enum SettledChain<Call> {
    /// Two reads agreed: the later one, innermost first.
    case settled([Call])
    /// The thread runs no script now (two reads found none).
    case none
    /// The chain changed on every read.
    case unsettled

    /// `read` copies the chain, innermost first, nil when there is none; `same` tells whether
    /// two reads' calls at one depth are the same call.
    static func read(_ read: () -> [Call]?, same: (Call, Call) -> Bool) -> SettledChain {
        var previous = read()
        for _ in 0..<3 {
            let next = read()
            if let a = previous, let b = next, abs(a.count - b.count) <= 1,
                zip(a.suffix(min(a.count, b.count)), b.suffix(min(a.count, b.count))).allSatisfy(same)
            {
                return .settled(b)
            }
            if previous == nil && next == nil { return .none }
            previous = next
        }
        return .unsettled
    }
}
