import DetectionTestSupport
import Testing

@testable import StallDetection

@Suite("StallDetector reasons")
struct StallDetectorReasonTests {
    private func endedStall(
        _ activity: ThreadActivity, onCPU: Double = 1, runQueue: Double = 0, seconds: Double = 1.5
    ) throws -> StallSnapshot {
        var scenario = DetectionScenario.inLoop()
        scenario.run(activity, for: seconds, onCPU: onCPU, runQueue: runQueue)
        scenario.run(.idle, for: 0.1)
        return try #require(scenario.ended.first)
    }

    @Test(arguments: [
        (ThreadActivity.running, StallReason.hang),
        (.lockWait, .lock),
        (.ioWait, .io),
        (.blockedCall, .blocked),
    ])
    func eachBucketGivesItsReason(activity: ThreadActivity, reason: StallReason) throws {
        let stall = try endedStall(activity)
        #expect(stall.reason == reason)
        #expect(stall.causeReason == reason)
        #expect(abs(stall.stateBreakdown.seconds(for: activity) - 1.5) < 1e-9)
    }

    @Test func runQueueWaitAboveOnCPUTimeIsStarved() throws {
        let stall = try endedStall(.running, onCPU: 0.3, runQueue: 0.7)
        #expect(stall.reason == .starved)
        #expect(stall.reason.hexCode == "0xc00010ff")
        #expect(abs(stall.stateBreakdown.onCPU - 0.45) < 0.001)
        #expect(abs(stall.stateBreakdown.runQueueWait - 1.05) < 0.001)
    }

    @Test func mostlyOnCPUWithSomeQueueWaitIsAHang() throws {
        let stall = try endedStall(.running, onCPU: 0.8, runQueue: 0.2)
        #expect(stall.reason == .hang)
        #expect(abs(stall.stateBreakdown.fractionOfBusy(\.onCPU) - 0.8) < 0.001)
    }

    @Test func mixedEpisodeTakesTheDominantFamily() throws {
        var scenario = DetectionScenario.inLoop()
        scenario.run(.running, for: 0.6)
        scenario.run(.lockWait, for: 0.9)
        scenario.run(.idle, for: 0.1)
        let stall = try #require(scenario.ended.first)
        #expect(stall.reason == .lock)
        #expect(abs(stall.stateBreakdown.running - 0.6) < 1e-9)
        #expect(abs(stall.stateBreakdown.lockWait - 0.9) < 1e-9)
    }

    @Test func deadlockFlagMakesAnUpdateWithTheDeadlockName() throws {
        var scenario = DetectionScenario.inLoop()
        scenario.run(.lockWait, for: 1.2)
        let events = scenario.detector.setDeadlock(true, at: scenario.time)
        #expect(events.count == 1)
        guard case .stallUpdated(let snapshot)? = events.first else {
            Issue.record("expected an update")
            return
        }
        #expect(snapshot.reason == .deadlock)
        #expect(snapshot.reason.name == "deadlock")
        #expect(snapshot.reason.hexCode == "0xdead10cc")
        #expect(snapshot.deadlock)
        #expect(snapshot.trigger == .deadlockChanged)
        let repeated = scenario.detector.setDeadlock(true, at: scenario.time)
        #expect(repeated.isEmpty)  // no change, no event
    }

    @Test func finishWithTargetGoneGivesDiedAndKeepsTheCause() throws {
        var scenario = DetectionScenario.inLoop()
        scenario.run(.lockWait, for: 1.5)
        scenario.finish(targetGone: true)
        let ended = try #require(scenario.ended.first)
        #expect(ended.reason == .died)
        #expect(ended.reason.hexCode == "0xdeadfa11")
        #expect(ended.causeReason == .lock)
        #expect(ended.ending == .targetDied)
        #expect(!ended.ongoing)
        #expect(abs(ended.duration - 1.5) < 1e-9)
        #expect(ended.fingerprint.hasPrefix("lock-"))
        #expect(scenario.episodes.last?.ending == .targetDied)
        #expect(!scenario.detector.isInEpisode)
    }

    @Test func goneObservationActsLikeTargetDeath() throws {
        var scenario = DetectionScenario.inLoop()
        scenario.run(.running, for: 1.3)
        scenario.run(.gone, for: 0.05)
        #expect(scenario.ended.count == 1)
        let ended = try #require(scenario.ended.first)
        #expect(ended.reason == .died)
        #expect(ended.causeReason == .hang)
        #expect(abs(ended.duration - 1.3) < 1e-9)
    }

    /// Issue 25: a process whose last act was a long sleep exited; it was blocked, not killed.
    @Test func anExitTheAgentSawKeepsTheReasonAndTheWholeLength() throws {
        var scenario = DetectionScenario.inLoop()
        scenario.run(.blockedCall, for: 1.6)
        scenario.detector.noteExit()
        scenario.run(.gone, for: 0.05)
        let ended = try #require(scenario.ended.first)
        #expect(ended.reason == .blocked)
        #expect(ended.causeReason == .blocked)
        #expect(ended.ending == .targetExited)
        // It exited between the last probe that saw it (1.59 s) and the one that did not
        // (1.60 s): dated between the two.
        #expect(abs(ended.duration - 1.595) < 1e-9)
        #expect(scenario.episodes.last?.ending == .targetExited)
        // The next target (a restart) is judged afresh: its death is a death.
        scenario.run(.idle, for: 0.2)
        scenario.run(.running, for: 1.2)
        scenario.run(.gone, for: 0.05)
        #expect(scenario.ended.last?.reason == .died)
    }

    @Test func finishWhenTheAgentStopsKeepsTheReason() throws {
        var scenario = DetectionScenario.inLoop()
        scenario.run(.running, for: 1.5)
        scenario.finish(targetGone: false)
        let ended = try #require(scenario.ended.first)
        #expect(ended.reason == .hang)
        #expect(ended.ending == .monitoringStopped)
        #expect(!ended.ongoing)
    }

    @Test func finishOfAShortEpisodeOrIdleThreadReportsNoStall() {
        var scenario = DetectionScenario.inLoop()
        scenario.run(.running, for: 0.3)
        scenario.finish(targetGone: true)
        #expect(scenario.stallEvents.isEmpty)
        #expect(scenario.episodes.count == 1)

        var idle = DetectionScenario.inLoop()
        idle.finish(targetGone: true)
        #expect(idle.kinds == ["launchPhaseEnded"])
    }

    @Test func finishAccountsTheTailSinceTheLastProbe() throws {
        var detector = StallDetector(configuration: DetectorConfiguration(startsInLaunchPhase: false))
        _ = detector.observe(ThreadObservation(time: 0, activity: .running))
        _ = detector.observe(ThreadObservation(time: 0.9, activity: .running))
        let events = detector.finish(at: 1.4, targetGone: true)
        #expect(events.map(\.kind) == ["stallStarted", "stallEnded", "episodeEnded"])
        let ended = try #require(events[1].snapshot)
        #expect(abs(ended.duration - 1.4) < 1e-9)
        #expect(ended.reason == .died)
    }

    @Test func onDemandSnapshotHasTheSnapshotReason() throws {
        var scenario = DetectionScenario.inLoop()
        scenario.run(.running, for: 0.3)
        let snapshot = scenario.detector.captureSnapshot(at: scenario.time)
        #expect(snapshot.reason == .snapshot)
        #expect(snapshot.reason.hexCode == "0xbaaaaaad")
        #expect(snapshot.causeReason == .hang)
        #expect(snapshot.trigger == .requested)
        #expect(snapshot.isOnDemand)
        #expect(snapshot.sampleCount == 6)

        var idle = DetectionScenario.inLoop()
        let sample = StackSample(time: idle.time, activity: .idle, frames: DetectionScenario.stack("epoll_wait", "main"))
        let idleSnapshot = idle.detector.captureSnapshot(at: idle.time, idleSample: sample)
        #expect(idleSnapshot.reason == .snapshot)
        #expect(idleSnapshot.heaviestStack?.topFunction == "epoll_wait")
        #expect(idleSnapshot.duration == 0)
    }
}
