import StallDetection
import Testing

@testable import StallMonitoring

/// docs/architecture.md, "Stops only past half the threshold": a sample stops the thread only
/// once its episode may be a stall, and always in a batch run.
@Suite struct CapturePolicyTests {
    static func threshold(_ phase: StallPhase) -> Double { phase == .launch ? 2.0 : 0.5 }

    @Test func noStopInTheFirstHalfOfTheThreshold() {
        #expect(CapturePolicy.withoutStop(episodeAge: 0.1, phase: .loop, threshold: Self.threshold))
        #expect(!CapturePolicy.withoutStop(episodeAge: 0.25, phase: .loop, threshold: Self.threshold), "half is past")
        #expect(!CapturePolicy.withoutStop(episodeAge: 0.4, phase: .loop, threshold: Self.threshold))
        // The phase's own threshold: launch's is longer.
        #expect(CapturePolicy.withoutStop(episodeAge: 0.4, phase: .launch, threshold: Self.threshold))
    }

    /// A batch run's episodes are whole tests, taken by ptrace; no episode open: a stop is allowed.
    @Test func batchRunsAndNoEpisodeMayStop() {
        #expect(!CapturePolicy.withoutStop(episodeAge: 0.01, phase: .batch, threshold: Self.threshold))
        #expect(!CapturePolicy.withoutStop(episodeAge: nil, phase: nil, threshold: Self.threshold))
        #expect(!CapturePolicy.withoutStop(episodeAge: 0.01, phase: nil, threshold: Self.threshold))
    }
}
