import StallDetection

/// Whether a sample may stop the thread. A running thread in the first half of the threshold
/// is sampled only without a stop (docs/architecture.md, "Stops only past half the
/// threshold"): most busy stretches of a healthy server end long before, and a stop then costs
/// the loop for nothing. Past half the threshold the stretch may be a stall, and its stack is
/// worth the stop.
enum CapturePolicy {
    /// True while the open episode is younger than half its phase's threshold. Not in a batch
    /// run (a test suite): its episodes are whole tests, named by their samples, and taken by
    /// ptrace anyway. No episode open: a stop is allowed.
    static func withoutStop(episodeAge: Double?, phase: StallPhase?, threshold: (StallPhase) -> Double) -> Bool {
        guard let age = episodeAge, let phase, phase != .batch else { return false }
        return age < threshold(phase) / 2
    }
}
