/// Chooses a stall's reason from where its time went (docs/architecture.md, "Reason codes").
///
/// Two levels, because the kernel cannot tell "on a CPU" from "waiting for one" by state
/// alone — both read as `running` — while schedstat can:
/// 1. The dominant bucket among running (on-CPU + run-queue wait), lock wait, I/O wait and
///    blocked call decides the family. Exact ties prefer lock, then io, then blocked, then
///    running: a named wait points at a cause the user can act on, busy is the default.
/// 2. Within running, the stall is `starved` when run-queue wait exceeds
///    `starvationRatio` × on-CPU time (default 1: more time waiting for a CPU than on one)
///    and the on-CPU time alone stays below the threshold (the work would have fitted had it
///    had the CPU), otherwise `hang`. Without the second condition a pure CPU hang on a loaded
///    2-core host reads as `starved` as soon as its run-queue wait passes its CPU time. Comparing against the running time rather than making run-queue wait
///    a bucket of its own keeps a thread that computed half the time on a contended CPU from
///    being called "blocked" or "lock" by a smaller wait.
/// With no busy time at all (only stopped, or nothing yet) the answer is `hang`, the generic
/// watchdog code.
public struct StallReasonClassifier: Hashable, Codable, Sendable {
    /// Run-queue wait must exceed this multiple of on-CPU time for `starved`.
    public var starvationRatio: Double

    public init(starvationRatio: Double = 1.0) {
        self.starvationRatio = starvationRatio
    }

    /// `threshold`: the stall threshold the episode was held to; nil skips the on-CPU test.
    public func classify(_ breakdown: StallStateBreakdown, threshold: Double? = nil) -> StallReason {
        // Ordered by tie preference: the first maximum wins.
        let families: [(seconds: Double, reason: StallReason?)] = [
            (breakdown.lockWait, .lock),
            (breakdown.ioWait, .io),
            (breakdown.blockedCall, .blocked),
            (breakdown.running, nil),  // nil: decide hang vs starved below
        ]
        var best = families[0]
        for family in families.dropFirst() where family.seconds > best.seconds {
            best = family
        }
        if best.seconds <= 0 { return .hang }
        if let reason = best.reason { return reason }
        if let threshold, breakdown.onCPU >= threshold { return .hang }
        return breakdown.runQueueWait > starvationRatio * breakdown.onCPU ? .starved : .hang
    }
}
