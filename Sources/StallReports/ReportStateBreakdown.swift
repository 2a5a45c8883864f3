import StallDetection

/// Where the main thread's time went during the stall: seconds and share per state.
public struct ReportStateBreakdown: Codable, Sendable, Equatable {
    public struct Share: Codable, Sendable, Equatable {
        public var seconds: Double
        /// 0…1. For the busy states, the share of the busy time (the stall's duration); for
        /// `stopped`, the share of all time accounted (busy + stopped).
        public var fraction: Double

        public init(seconds: Double, fraction: Double) {
            self.seconds = seconds
            self.fraction = fraction
        }
    }

    public var onCPU: Share
    public var runQueueWait: Share
    public var lockWait: Share
    public var ioWait: Share
    public var blockedCall: Share
    /// Not part of the stall: the stall clock pauses while the thread is stopped.
    public var stopped: Share
    /// Sum of the busy states.
    public var busySeconds: Double

    public init(
        onCPU: Share, runQueueWait: Share, lockWait: Share, ioWait: Share, blockedCall: Share, stopped: Share,
        busySeconds: Double
    ) {
        self.onCPU = onCPU
        self.runQueueWait = runQueueWait
        self.lockWait = lockWait
        self.ioWait = ioWait
        self.blockedCall = blockedCall
        self.stopped = stopped
        self.busySeconds = busySeconds
    }

    public init(_ breakdown: StallStateBreakdown) {
        func busyShare(_ part: KeyPath<StallStateBreakdown, Double>) -> Share {
            Share(
                seconds: ReportNumber.seconds(breakdown[keyPath: part]),
                fraction: ReportNumber.fraction(breakdown.fractionOfBusy(part)))
        }
        onCPU = busyShare(\.onCPU)
        runQueueWait = busyShare(\.runQueueWait)
        lockWait = busyShare(\.lockWait)
        ioWait = busyShare(\.ioWait)
        blockedCall = busyShare(\.blockedCall)
        let total = breakdown.total
        stopped = Share(
            seconds: ReportNumber.seconds(breakdown.stopped),
            fraction: ReportNumber.fraction(total > 0 ? breakdown.stopped / total : 0))
        busySeconds = ReportNumber.seconds(breakdown.busy)
    }

    /// The busy states in the order the report prints them, with their text labels.
    var labelledBusyShares: [(label: String, share: Share)] {
        [
            ("running", onCPU), ("run-queue wait", runQueueWait), ("lock wait", lockWait), ("I/O wait", ioWait),
            ("blocked", blockedCall),
        ]
    }
}
