/// One probe of the main thread (taken every ~10 ms by the agent from `/proc`).
///
/// The detector treats the activity as holding from this probe until the next one
/// (sample-and-hold), and attributes the schedstat deltas between the two probes to it.
public struct ThreadObservation: Sendable, Hashable {
    /// Monotonic seconds (any origin, as long as every call to the detector uses the same one).
    public var time: Double
    public var activity: ThreadActivity
    /// Cumulative on-CPU time from `/proc/…/schedstat` (first field), nanoseconds.
    public var cpuNanos: UInt64
    /// Cumulative run-queue wait from `/proc/…/schedstat` (second field), nanoseconds.
    public var runQueueNanos: UInt64

    public init(time: Double, activity: ThreadActivity, cpuNanos: UInt64 = 0, runQueueNanos: UInt64 = 0) {
        self.time = time
        self.activity = activity
        self.cpuNanos = cpuNanos
        self.runQueueNanos = runQueueNanos
    }
}
