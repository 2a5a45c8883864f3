import DetectionTestSupport
import Testing

@testable import StallDetection

@Suite("StallDetector episodes")
struct StallDetectorEpisodeTests {
    @Test func idleOnlyStreamProducesNoStallEventsAndWantsNoSamples() {
        var scenario = DetectionScenario()
        scenario.run(.idle, for: 5)
        #expect(scenario.kinds == ["launchPhaseEnded"])
        #expect(scenario.sampleTimes.isEmpty)
        #expect(!scenario.detector.wantsSample(at: scenario.time))
        #expect(!scenario.detector.isInEpisode)
    }

    @Test func idleOnlyStreamWhenAttachedProducesNoEventsAtAll() {
        var scenario = DetectionScenario(configuration: DetectorConfiguration(startsInLaunchPhase: false))
        scenario.run(.idle, for: 5)
        #expect(scenario.events.isEmpty)
        #expect(scenario.sampleTimes.isEmpty)
    }

    @Test func shortBusyEpisodesAreNotStalls() {
        var scenario = DetectionScenario.inLoop()
        for _ in 0..<10 {
            scenario.run(.running, for: 0.3)
            scenario.run(.blockedCall, for: 0.2)
            scenario.run(.idle, for: 0.1)
        }
        #expect(scenario.stallEvents.isEmpty)
        #expect(scenario.episodes.count == 10)
        for episode in scenario.episodes {
            #expect(abs(episode.duration - 0.5) < 1e-9)
            #expect(!episode.wasStall)
            #expect(episode.phase == .loop)
            #expect(episode.ending == .returnedToIdle)
            #expect(abs(episode.stateBreakdown.running - 0.3) < 1e-9)
            #expect(abs(episode.stateBreakdown.blockedCall - 0.2) < 1e-9)
        }
    }

    @Test func aOnePointFiveSecondHangIsOneStallWithTrueDuration() throws {
        var scenario = DetectionScenario.inLoop()
        scenario.run(.running, for: 1.5)
        scenario.run(.idle, for: 0.5)

        #expect(scenario.kinds == ["launchPhaseEnded", "stallStarted", "stallEnded", "episodeEnded"])
        let startEvent = try #require(scenario.stallEvents.first)
        #expect(abs(startEvent.time - 1.5) <= 0.02)  // age 1.0 s, episode began at 0.5 s

        let started = try #require(scenario.started.first)
        #expect(started.ongoing)
        #expect(started.ending == nil)
        #expect(started.revision == 0)
        #expect(started.trigger == .detected)
        #expect(abs(started.duration - 1.0) <= 0.02)
        #expect(started.reason == .hang)
        #expect(started.phase == .loop)
        #expect(started.threshold == 1.0)

        let ended = try #require(scenario.ended.first)
        #expect(ended.id == started.id)
        #expect(!ended.ongoing)
        #expect(ended.ending == .returnedToIdle)
        #expect(ended.trigger == .ended)
        #expect(abs(ended.duration - 1.5) <= 0.02)
        #expect(abs(ended.startTime - 0.5) < 1e-9)
        #expect(abs(ended.endTime - 2.0) < 1e-9)
        #expect(ended.reason == .hang)
        #expect(ended.causeReason == .hang)
        #expect(ended.sampleCount == 30)  // one every 50 ms over 1.5 s
        #expect(ended.samples.count == 30)
        #expect(ended.heaviestStack?.sampleCount == 30)
        #expect(ended.heaviestStack?.frames.map(\.function) == ["work", "main"])
        #expect(ended.stallFrame?.function == "work")
        #expect(ended.callTree.count == 30)
        #expect(abs(ended.sampledDuration - 1.45) < 1e-9)

        let episode = try #require(scenario.episodes.first)
        #expect(episode.stallID == ended.id)
    }

    @Test func stallIDsIncrement() {
        var scenario = DetectionScenario.inLoop()
        for _ in 0..<3 {
            scenario.run(.running, for: 1.2)
            scenario.run(.idle, for: 0.2)
        }
        #expect(scenario.started.map(\.id) == [1, 2, 3])
        #expect(scenario.ended.map(\.id) == [1, 2, 3])
    }

    @Test func episodeEndingExactlyAtTheThresholdIsAStallReportedAndFinalisedAtOnce() {
        var scenario = DetectionScenario.inLoop()
        scenario.run(.running, for: 1.0)
        scenario.run(.idle, for: 0.1)
        #expect(scenario.kinds == ["launchPhaseEnded", "stallStarted", "stallEnded", "episodeEnded"])
        #expect(abs((scenario.ended.first?.duration ?? 0) - 1.0) < 1e-9)
    }

    @Test func jitteredProbesMeasureDurationWithinTwoProbeIntervals() {
        // The true busy period is [0.503, 2.003); probes come every 8–12 ms at pseudo-random
        // offsets and report the true state at their instant.
        for seed in UInt64(1)...20 {
            var rng = seed &* 0x9E37_79B9_7F4A_7C15
            var detector = StallDetector(configuration: DetectorConfiguration(startsInLaunchPhase: false))
            var t = 0.0
            var durations: [Double] = []
            while t < 3 {
                rng = rng &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                t += 0.008 + Double(rng >> 40) / Double(1 << 24) * 0.004
                let busy = t >= 0.503 && t < 2.003
                for event in detector.observe(ThreadObservation(time: t, activity: busy ? .running : .idle)) {
                    if case .stallEnded(let snapshot) = event { durations.append(snapshot.duration) }
                }
            }
            #expect(durations.count == 1)
            #expect(abs((durations.first ?? 0) - 1.5) <= 0.024, "seed \(seed)")
        }
    }

    @Test func stoppedTimeDoesNotAdvanceTheAge() throws {
        var scenario = DetectionScenario.inLoop()
        scenario.run(.running, for: 0.5)
        scenario.run(.stopped, for: 5)
        scenario.run(.running, for: 0.3)
        scenario.run(.idle, for: 0.2)
        #expect(scenario.stallEvents.isEmpty)
        let episode = try #require(scenario.episodes.first)
        #expect(abs(episode.duration - 0.8) < 1e-9)
        #expect(abs(episode.stateBreakdown.stopped - 5) < 1e-9)
        #expect(abs(episode.endTime - episode.startTime - 5.8) < 1e-9)
    }

    @Test func stopInTheMiddlePausesTheStallClockWithoutResettingIt() throws {
        var scenario = DetectionScenario.inLoop()
        scenario.run(.running, for: 0.6)
        scenario.run(.stopped, for: 5)
        scenario.run(.running, for: 0.6)
        scenario.run(.idle, for: 0.1)
        let started = try #require(scenario.started.first)
        // Detected when 0.4 s more of running brought the age to 1.0: at 0.5 + 0.6 + 5 + 0.4.
        #expect(abs((scenario.stallEvents.first?.time ?? 0) - 6.5) <= 0.011)
        #expect(abs(started.duration - 1.0) <= 0.011)
        let ended = try #require(scenario.ended.first)
        #expect(abs(ended.duration - 1.2) < 1e-9)
        #expect(abs(ended.stateBreakdown.stopped - 5) < 1e-9)
        #expect(ended.reason == .hang)
    }

    @Test func sigstopAloneIsNeverAnEpisode() {
        var scenario = DetectionScenario.inLoop()
        scenario.run(.stopped, for: 8)
        scenario.run(.idle, for: 1)
        #expect(scenario.kinds == ["launchPhaseEnded"])
        #expect(scenario.sampleTimes.isEmpty)

        // Nor at start-up, past the launch threshold.
        var launch = DetectionScenario()
        launch.run(.stopped, for: 15)
        #expect(launch.events.isEmpty)
        #expect(!launch.detector.isInEpisode)
    }

    @Test func wantsSampleOnlyWhileBusyAndAtTheInterval() {
        var detector = StallDetector()
        #expect(!detector.wantsSample(at: 0))
        _ = detector.observe(ThreadObservation(time: 0, activity: .idle))
        #expect(!detector.wantsSample(at: 0))
        _ = detector.observe(ThreadObservation(time: 0.01, activity: .running))
        #expect(detector.wantsSample(at: 0.01))
        _ = detector.record(StackSample(time: 0.01, activity: .running, frames: DetectionScenario.stack("a")))
        #expect(!detector.wantsSample(at: 0.02))
        #expect(!detector.wantsSample(at: 0.059))
        #expect(detector.wantsSample(at: 0.06))
        #expect(abs((detector.nextSampleTime ?? 0) - 0.06) < 1e-12)
        _ = detector.observe(ThreadObservation(time: 0.07, activity: .stopped))
        #expect(!detector.wantsSample(at: 0.07))
        #expect(detector.isInEpisode)
        _ = detector.observe(ThreadObservation(time: 0.08, activity: .lockWait))
        #expect(detector.wantsSample(at: 0.08))
        // A failed capture (no frames) still restarts the interval but stores nothing.
        _ = detector.record(StackSample(time: 0.08, activity: .lockWait, frames: []))
        #expect(!detector.wantsSample(at: 0.09))
        #expect(detector.ring.count == 1)
        _ = detector.observe(ThreadObservation(time: 0.09, activity: .idle))
        #expect(!detector.wantsSample(at: 0.5))
    }

    @Test func samplesOutsideAnEpisodeOrOfAnIdleThreadAreNotStored() {
        var detector = StallDetector()
        _ = detector.record(StackSample(time: 0, activity: .running, frames: DetectionScenario.stack("a")))
        #expect(detector.ring.isEmpty)
        _ = detector.observe(ThreadObservation(time: 0.01, activity: .running))
        _ = detector.record(StackSample(time: 0.01, activity: .idle, frames: DetectionScenario.stack("epoll_wait")))
        #expect(detector.ring.isEmpty)
    }

    @Test func outOfOrderObservationsAreIgnored() {
        var detector = StallDetector(configuration: DetectorConfiguration(startsInLaunchPhase: false))
        _ = detector.observe(ThreadObservation(time: 1.0, activity: .running))
        let stale = detector.observe(ThreadObservation(time: 0.5, activity: .idle))
        #expect(stale.isEmpty)
        #expect(detector.isInEpisode)
        #expect(detector.episodeStartTime == 1.0)
    }

    @Test func ringStartsEmptyForEachEpisode() throws {
        var scenario = DetectionScenario.inLoop()
        scenario.stack = DetectionScenario.stack("first", "main")
        scenario.run(.running, for: 0.5)
        scenario.run(.idle, for: 0.1)
        scenario.stack = DetectionScenario.stack("second", "main")
        scenario.run(.running, for: 1.2)
        let started = try #require(scenario.started.first)
        #expect(started.samples.allSatisfy { $0.frames.first?.function == "second" })
        #expect(started.callTree.first(function: "first") == nil)
    }
}
