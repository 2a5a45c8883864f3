import DetectionTestSupport
import Testing

@testable import StallDetection

@Suite("StallDetector launch phase")
struct StallDetectorLaunchTests {
    @Test func fiveSecondStartupIsNotAStall() throws {
        var scenario = DetectionScenario()
        #expect(scenario.detector.phase == .launch)
        scenario.run(.running, for: 5)
        scenario.run(.idle, for: 0.5)
        #expect(scenario.kinds == ["episodeEnded", "launchPhaseEnded"])
        let episode = try #require(scenario.episodes.first)
        #expect(episode.phase == .launch)
        #expect(abs(episode.duration - 5) < 1e-9)
        #expect(scenario.detector.phase == .loop)
    }

    @Test func twelveSecondStartupIsALaunchStall() throws {
        var scenario = DetectionScenario()
        scenario.run(.running, for: 12)
        scenario.run(.idle, for: 0.5)
        #expect(scenario.kinds == ["stallStarted", "stallEnded", "episodeEnded", "launchPhaseEnded"])
        let startTime = try #require(scenario.stallEvents.first?.time)
        #expect(abs(startTime - 10) <= 0.011)
        let started = try #require(scenario.started.first)
        #expect(started.phase == .launch)
        #expect(started.threshold == 10)
        let ended = try #require(scenario.ended.first)
        #expect(ended.phase == .launch)
        #expect(abs(ended.duration - 12) < 1e-9)
    }

    @Test func afterFirstIdleTheLoopThresholdApplies() throws {
        var scenario = DetectionScenario()
        scenario.run(.running, for: 5)  // start-up, allowed
        scenario.run(.idle, for: 0.2)
        scenario.run(.running, for: 1.5)
        scenario.run(.idle, for: 0.2)
        #expect(scenario.started.count == 1)
        let started = try #require(scenario.started.first)
        #expect(started.phase == .loop)
        #expect(started.threshold == 1)
        let startTime = try #require(scenario.stallEvents.first?.time)
        #expect(abs(startTime - 6.2) <= 0.011)
    }

    @Test func neverIdleProcessBecomesALaunchStallEvenWhenItBlocks() throws {
        var scenario = DetectionScenario()
        scenario.run(.blockedCall, for: 10.5)
        let started = try #require(scenario.started.first)
        #expect(started.phase == .launch)
        #expect(started.reason == .blocked)
        #expect(scenario.detector.isStalled)
    }

    @Test func attachingToARunningProcessUsesTheLoopThresholdAtOnce() throws {
        var scenario = DetectionScenario(configuration: DetectorConfiguration(startsInLaunchPhase: false))
        scenario.run(.running, for: 1.5)
        let started = try #require(scenario.started.first)
        #expect(started.phase == .loop)
    }

    @Test func launchThresholdIsNeverStricterThanTheLoopThreshold() {
        let configuration = DetectorConfiguration(threshold: 20, launchThreshold: 10)
        #expect(configuration.threshold(for: .launch) == 20)
        #expect(configuration.threshold(for: .loop) == 20)
        #expect(DetectorConfiguration().threshold(for: .launch) == 10)
    }

    @Test func targetDeathRestartsTheLaunchPhaseForARestartedTarget() throws {
        var scenario = DetectionScenario()
        scenario.run(.idle, for: 0.2)
        #expect(scenario.detector.phase == .loop)
        scenario.finish(targetGone: true)
        #expect(scenario.detector.phase == .launch)
        scenario.run(.running, for: 5)
        scenario.run(.idle, for: 0.1)
        #expect(scenario.started.isEmpty)
        #expect(scenario.episodes.last?.phase == .launch)
    }
}
