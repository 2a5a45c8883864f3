/// Builds a `StallStateBreakdown` from consecutive observations.
///
/// Each interval between two probes is attributed to the activity seen at its start
/// (sample-and-hold), matching how episode boundaries are placed (start = first busy probe,
/// end = first idle probe). The on-CPU / run-queue split of `running` time is done on the
/// totals, not per interval: schedstat's counters advance at scheduler ticks (about every
/// 4 ms) and context switches, so a single 10 ms interval can show no change at all, while
/// the ratio of the summed deltas is accurate.
public struct StallStateAccumulator: Hashable, Sendable {
    private var runningSeconds: Double = 0
    private var runningCPUNanos: UInt64 = 0
    private var runningQueueNanos: UInt64 = 0
    private var lockWait: Double = 0
    private var ioWait: Double = 0
    private var blockedCall: Double = 0
    private var stopped: Double = 0

    public init() {}

    /// Attributes the interval from `start` to `end` to `start.activity`.
    public mutating func add(from start: ThreadObservation, to end: ThreadObservation) {
        add(
            seconds: end.time - start.time, activity: start.activity,
            cpuNanos: Self.delta(start.cpuNanos, end.cpuNanos),
            runQueueNanos: Self.delta(start.runQueueNanos, end.runQueueNanos))
    }

    /// Attributes `seconds` to `activity`; the schedstat deltas matter only for `running`.
    public mutating func add(seconds: Double, activity: ThreadActivity, cpuNanos: UInt64 = 0, runQueueNanos: UInt64 = 0) {
        guard seconds > 0 else { return }
        switch activity {
        case .running:
            runningSeconds += seconds
            runningCPUNanos &+= cpuNanos
            runningQueueNanos &+= runQueueNanos
        case .lockWait: lockWait += seconds
        case .ioWait: ioWait += seconds
        case .blockedCall: blockedCall += seconds
        case .stopped: stopped += seconds
        case .idle, .gone: break  // never inside an episode
        }
    }

    public var breakdown: StallStateBreakdown {
        // Without schedstat data (both deltas zero) the thread was runnable and nothing says it
        // waited, so all of it counts as on-CPU.
        let measured = Double(runningCPUNanos) + Double(runningQueueNanos)
        let queueShare = measured > 0 ? Double(runningQueueNanos) / measured : 0
        let queue = runningSeconds * queueShare
        return StallStateBreakdown(
            onCPU: runningSeconds - queue, runQueueWait: queue, lockWait: lockWait, ioWait: ioWait,
            blockedCall: blockedCall, stopped: stopped)
    }

    /// A counter that went backwards (thread id reused, counters reset) contributes nothing
    /// rather than a huge wrapped value.
    private static func delta(_ old: UInt64, _ new: UInt64) -> UInt64 {
        new >= old ? new - old : 0
    }
}
