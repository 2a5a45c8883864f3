/// Seconds the main thread spent in each state during a busy episode, with `running` split
/// into on-CPU time and run-queue wait. It is what the reason classifier reads and what the
/// report prints as "Main Thread: running 96 %, run-queue wait 4 %".
public struct StallStateBreakdown: Hashable, Codable, Sendable {
    /// Seconds running on a CPU.
    public var onCPU: Double
    /// Seconds runnable but waiting for a CPU.
    public var runQueueWait: Double
    /// Seconds waiting for a lock.
    public var lockWait: Double
    /// Seconds blocked in disk / file I/O.
    public var ioWait: Double
    /// Seconds blocked in another synchronous call.
    public var blockedCall: Double
    /// Seconds stopped (SIGSTOP, another tracer); not part of the stall's duration.
    public var stopped: Double

    public init(
        onCPU: Double = 0, runQueueWait: Double = 0, lockWait: Double = 0, ioWait: Double = 0,
        blockedCall: Double = 0, stopped: Double = 0
    ) {
        self.onCPU = onCPU
        self.runQueueWait = runQueueWait
        self.lockWait = lockWait
        self.ioWait = ioWait
        self.blockedCall = blockedCall
        self.stopped = stopped
    }

    /// Seconds runnable (on CPU or in the run queue).
    public var running: Double { onCPU + runQueueWait }

    /// Seconds that count toward the stall: everything but `stopped`.
    public var busy: Double { running + lockWait + ioWait + blockedCall }

    /// Every second accounted, stopped included.
    public var total: Double { busy + stopped }

    /// Seconds attributed to one activity (`running` is the sum of on-CPU and run-queue wait;
    /// `idle` and `gone` are never part of an episode, so 0).
    public func seconds(for activity: ThreadActivity) -> Double {
        switch activity {
        case .running: return running
        case .lockWait: return lockWait
        case .ioWait: return ioWait
        case .blockedCall: return blockedCall
        case .stopped: return stopped
        case .idle, .gone: return 0
        }
    }

    /// Share of the busy time (0…1) for a part of this breakdown, e.g. `fractionOfBusy(\.onCPU)`;
    /// 0 when nothing was busy, so callers need not guard the division.
    public func fractionOfBusy(_ part: KeyPath<StallStateBreakdown, Double>) -> Double {
        let whole = busy
        return whole > 0 ? self[keyPath: part] / whole : 0
    }
}
