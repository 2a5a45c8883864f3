/// Whether a sample may stop the thread: the capture's own rule, kept beside the code that
/// stops. A running thread in the first half of the threshold is sampled only without a stop
/// (docs/architecture.md, "Stops only past half the threshold"): most busy stretches of a
/// healthy server end long before, and a stop then costs the loop for nothing. Past half the
/// threshold the stretch may be a stall, and its stack is worth the stop.
public enum StopPolicy {
    /// True while the open episode (`episodeAge` seconds old, nil: none open) is younger than
    /// half of `threshold`, the threshold of its phase. Not in a batch run (a test suite): its
    /// episodes are whole tests, named by their samples, and taken by ptrace anyway. No
    /// episode open: a stop is allowed.
    public static func withoutStop(episodeAge: Double?, threshold: Double?, batch: Bool) -> Bool {
        guard let age = episodeAge, let threshold, !batch else { return false }
        return age < threshold / 2
    }
}
