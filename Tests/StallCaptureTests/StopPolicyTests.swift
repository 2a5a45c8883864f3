import StallCapture
import Testing

/// docs/architecture.md, "Stops only past half the threshold": a sample stops the thread only
/// once its episode may be a stall, and always in a batch run.
@Suite struct StopPolicyTests {
    @Test func noStopInTheFirstHalfOfTheThreshold() {
        #expect(StopPolicy.withoutStop(episodeAge: 0.1, threshold: 0.5, batch: false))
        #expect(!StopPolicy.withoutStop(episodeAge: 0.25, threshold: 0.5, batch: false), "half is past")
        #expect(!StopPolicy.withoutStop(episodeAge: 0.4, threshold: 0.5, batch: false))
        // The phase's own threshold: launch's is longer.
        #expect(StopPolicy.withoutStop(episodeAge: 0.4, threshold: 2.0, batch: false))
    }

    /// A batch run's episodes are whole tests, taken by ptrace; no episode open: a stop is allowed.
    @Test func batchRunsAndNoEpisodeMayStop() {
        #expect(!StopPolicy.withoutStop(episodeAge: 0.01, threshold: 0.5, batch: true))
        #expect(!StopPolicy.withoutStop(episodeAge: nil, threshold: 0.5, batch: false))
        #expect(!StopPolicy.withoutStop(episodeAge: 0.01, threshold: nil, batch: false))
    }
}
