/// What watching cost the target during the stall: the "Agent:" line, so a reader can judge
/// how much the report itself disturbed the program.
public struct ReportAgentStats: Codable, Sendable, Equatable {
    /// Stack samples taken.
    public var samples: Int
    /// Captures that stopped the thread (running thread: ptrace stop, copy, resume).
    public var capturesWithStop: Int
    /// Captures of a blocked thread from `/proc/…/syscall`, with no stop.
    public var capturesWithoutStop: Int
    public var failedCaptures: Int
    /// Time the target was paused per stopping capture, median and 99th percentile.
    public var pauseP50Micros: Double
    public var pauseP99Micros: Double
    /// Sum of all pauses.
    public var pauseTotalMicros: Double
    public var probeIntervalSeconds: Double

    public init(
        samples: Int = 0, capturesWithStop: Int = 0, capturesWithoutStop: Int = 0, failedCaptures: Int = 0,
        pauseP50Micros: Double = 0, pauseP99Micros: Double = 0, pauseTotalMicros: Double = 0,
        probeIntervalSeconds: Double = 0
    ) {
        self.samples = samples
        self.capturesWithStop = capturesWithStop
        self.capturesWithoutStop = capturesWithoutStop
        self.failedCaptures = failedCaptures
        self.pauseP50Micros = pauseP50Micros
        self.pauseP99Micros = pauseP99Micros
        self.pauseTotalMicros = pauseTotalMicros
        self.probeIntervalSeconds = probeIntervalSeconds
    }
}
