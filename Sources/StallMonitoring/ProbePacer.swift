import StallProc

/// The pace of every probe loop (a lone monitor, the host agent, the command wrapper): one
/// round every `interval`, jittered ±20 % so the probes never alias with the target's own
/// periodic timers, and restarted from now rather than bursting when the loop fell far behind
/// (a long capture, a first symbolization). The engine does the waiting (`WatchEngine.endRound`).
package struct ProbePacer {
    let interval: Double
    private var next: Double
    // SystemRandomNumberGenerator is a getrandom(2) call per draw; jitter needs no secrecy.
    private var random: JitterGenerator

    package init(interval: Double, start: Double, seed: UInt64) {
        self.interval = interval
        next = start
        random = JitterGenerator(seed: UInt64(truncatingIfNeeded: start.bitPattern) ^ seed)
    }

    /// Advances to the next round and returns when it is due; restarted from now if far behind.
    package mutating func nextRoundDue() -> Double {
        next += interval * Double.random(in: 0.8...1.2, using: &random)
        let now = MonotonicTime.seconds()
        if next < now - interval * 5 { next = now }
        return next
    }

    /// The loop waited on its own (for a watched thread to wake): the next round is due now.
    package mutating func restart() {
        next = MonotonicTime.seconds()
    }
}
