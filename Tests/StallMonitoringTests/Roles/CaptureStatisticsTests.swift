import Testing

@testable import StallMonitoring
import StallReports

/// A report's "Agent:" line covers its own busy episode; the metrics' totals cover the watch.
@Suite struct CaptureStatisticsTests {
    @Test func countsAndPausesOfTheEpisode() {
        var statistics = CaptureStatistics()
        statistics.resetIfNewEpisode(startedAt: 10)
        statistics.recordStop(pauseNanos: 100_000)
        statistics.recordStop(pauseNanos: 300_000)
        statistics.recordStop(pauseNanos: 200_000)
        statistics.recordWithoutStop()
        statistics.recordFailure()
        let stats = statistics.episodeStats(samples: 5, probeInterval: 0.005)
        #expect(stats.samples == 5)
        #expect(stats.capturesWithStop == 3)
        #expect(stats.capturesWithoutStop == 1)
        #expect(stats.failedCaptures == 1)
        #expect(stats.pauseP50Micros == 200)
        #expect(stats.pauseP99Micros == 300)
        #expect(stats.pauseTotalMicros == 600)
        #expect(stats.probeIntervalSeconds == 0.005)
    }

    /// The same episode seen again keeps its counts; a new one starts from zero, while the
    /// watch's totals go on.
    @Test func aNewEpisodeStartsAfreshButTheTotalsGoOn() {
        var statistics = CaptureStatistics()
        statistics.resetIfNewEpisode(startedAt: 10)
        statistics.recordStop(pauseNanos: 1_000_000)
        statistics.recordWithoutStop()
        statistics.resetIfNewEpisode(startedAt: 10)
        statistics.resetIfNewEpisode(startedAt: nil)
        #expect(statistics.episodeWithStop == 1)
        #expect(statistics.episodeWithoutStop == 1)

        statistics.resetIfNewEpisode(startedAt: 12)
        #expect(statistics.episodeWithStop == 0)
        #expect(statistics.episodeWithoutStop == 0)
        #expect(statistics.episodeFailed == 0)
        #expect(statistics.episodePauses.isEmpty)
        #expect(statistics.episodeStats(samples: 0, probeInterval: 0.005).pauseTotalMicros == 0)
        statistics.recordStop(pauseNanos: 2_000_000)
        statistics.recordWithoutStop()
        #expect(abs(statistics.pauseSecondsTotal - 0.003) < 1e-12)
        #expect(statistics.capturesWithoutStop == 2)
    }
}
