import StallReports

/// What watching cost the target: captures with and without a stop, failed ones and the
/// pauses, for the current busy episode (the report's "Agent:" line) and for the whole watch
/// (the metrics).
struct CaptureStatistics {
    // Per-episode agent statistics (reset when a new busy episode starts).
    private var episodeStart: Double?
    /// Each stopping capture's pause, in microseconds.
    private(set) var episodePauses: [Double] = []
    private(set) var episodeWithStop = 0
    private(set) var episodeWithoutStop = 0
    private(set) var episodeFailed = 0
    /// Total time the target was stopped by captures, and captures made without a stop.
    private(set) var pauseSecondsTotal = 0.0
    private(set) var capturesWithoutStop = 0

    /// `startTime`: when the busy episode in progress began, nil outside one. A start not seen
    /// before begins the episode's counts afresh.
    mutating func resetIfNewEpisode(startedAt startTime: Double?) {
        guard let startTime, startTime != (episodeStart ?? -1) else { return }
        episodeStart = startTime
        episodePauses.removeAll(keepingCapacity: true)
        episodeWithStop = 0
        episodeWithoutStop = 0
        episodeFailed = 0
    }

    mutating func recordStop(pauseNanos: UInt64) {
        episodeWithStop += 1
        episodePauses.append(Double(pauseNanos) / 1000)
        pauseSecondsTotal += Double(pauseNanos) / 1e9
    }

    mutating func recordWithoutStop() {
        episodeWithoutStop += 1
        capturesWithoutStop += 1
    }

    mutating func recordFailure() {
        episodeFailed += 1
    }

    /// The report's "Agent:" figures for the episode in progress.
    func episodeStats(samples: Int, probeInterval: Double) -> ReportAgentStats {
        let pauses = Percentiles(episodePauses)
        return ReportAgentStats(
            samples: samples, capturesWithStop: episodeWithStop, capturesWithoutStop: episodeWithoutStop,
            failedCaptures: episodeFailed, pauseP50Micros: pauses.p50, pauseP99Micros: pauses.p99,
            pauseTotalMicros: pauses.total, probeIntervalSeconds: probeInterval)
    }
}
