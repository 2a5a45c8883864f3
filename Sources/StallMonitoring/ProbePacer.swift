import StallProc

/// The pace of every probe loop (a lone monitor, the host agent, the command wrapper): one
/// round every `interval`, jittered ±20 % so the probes never alias with the target's own
/// periodic timers, and restarted from now rather than bursting when the loop fell far behind
/// (a long capture, a first symbolization). A signal for the loop ends the wait early.
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

    /// Sleeps until the next round is due.
    package mutating func waitForNextRound() {
        next += interval * Double.random(in: 0.8...1.2, using: &random)
        let wait = next - MonotonicTime.seconds()
        if wait > 0 {
            SignalInbox.sleep(wait)
        } else if wait < -interval * 5 {
            next = MonotonicTime.seconds()
        }
    }

    /// Advances to the next round and returns when it is due, for a loop that waits on its
    /// own (on wake-up descriptors as well as the clock); restarted from now if far behind.
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
