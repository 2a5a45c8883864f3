import DetectionTestSupport
import Testing

@testable import StallDetection

/// Loop-turn evidence in the pure detector: a saturated loop that is never seen asleep but
/// turns between probes is not a stall; one slow turn inside it is, timed from its own start.
@Suite("StallDetector loop turns")
struct LoopTurnDetectionTests {
    typealias S = DetectionScenario

    /// Probes every 10 ms; `turnsAt(tick)` says whether the loop turned before that probe.
    private func drive(
        _ detector: inout StallDetector, ticks: Range<Int>, activity: ThreadActivity = .running,
        frames: (Int) -> [SampledFrame] = { _ in S.stack("work", "main") }, turnsAt: (Int) -> Bool
    ) -> [DetectorEvent] {
        var events: [DetectorEvent] = []
        for tick in ticks {
            let now = Double(tick) * 0.01
            let cpu = UInt64(tick) * 10_000_000
            events += detector.observe(
                ThreadObservation(time: now, activity: activity, cpuNanos: cpu), loopTurned: turnsAt(tick))
            if detector.wantsSample(at: now) {
                events += detector.record(StackSample(time: now, activity: activity, frames: frames(tick)))
            }
        }
        return events
    }

    private func stalls(_ events: [DetectorEvent]) -> [StallSnapshot] {
        events.compactMap { if case .stallEnded(let s) = $0 { s } else { nil } }
    }

    @Test func aLoopThatTurnsEveryProbeIsNeverAStall() {
        var detector = StallDetector(configuration: DetectorConfiguration(startsInLaunchPhase: false, loopTurnEvidence: .kernelCounter))
        let events = drive(&detector, ticks: 0..<1000, turnsAt: { _ in true })
        #expect(events.allSatisfy { $0.snapshot == nil }, "\(events.map(\.kind))")
    }

    @Test func oneSlowTurnInsideLoadIsOneStallTimedFromItsStart() throws {
        var detector = StallDetector(configuration: DetectorConfiguration(startsInLaunchPhase: false, loopTurnEvidence: .kernelCounter))
        // Turns every probe, then no turn from tick 300 to 450 (1.5 s), then turns again.
        let events = drive(&detector, ticks: 0..<700, turnsAt: { !(301..<450).contains($0) })
        let ended = stalls(events)
        #expect(ended.count == 1)
        let stall = try #require(ended.first)
        #expect(abs(stall.duration - 1.5) < 0.011, "\(stall.duration)")
        #expect(abs(stall.startTime - 3.0) < 0.011)
        #expect(stall.loopTurnEvidence == .kernelCounter)
        #expect(stall.reason == .hang)
    }

    @Test func aTurnEndsTheLaunchPhase() {
        var detector = StallDetector(configuration: DetectorConfiguration(launchThreshold: 10, loopTurnEvidence: .kernelCounter))
        #expect(detector.phase == .launch)
        _ = drive(&detector, ticks: 0..<5, turnsAt: { $0 == 3 })
        #expect(detector.phase == .loop)
    }

    /// The agent itself was held up for 1.3 s (a first symbolization of a 100 MB binary) and
    /// then found the loop had turned: the target's loop did turn somewhere in that gap, so the
    /// gap is not the target's stall.
    @Test func anAgentGapThatEndsInATurnIsNotAStall() {
        var detector = StallDetector(configuration: DetectorConfiguration(startsInLaunchPhase: false, loopTurnEvidence: .kernelCounter))
        var events = detector.observe(ThreadObservation(time: 1.00, activity: .running), loopTurned: true)
        events += detector.observe(ThreadObservation(time: 2.30, activity: .running), loopTurned: true)
        events += detector.observe(ThreadObservation(time: 2.31, activity: .idle))
        #expect(events.allSatisfy { $0.snapshot == nil }, "\(events.map(\.kind))")
    }

    /// The agent opens its counters half a threshold into a busy episode of a loop it never
    /// saw idle: the stack rule judged the episode until then (no loop frames known, so it held
    /// everything); from the switch, the first counted turn ends it and no stall is reported,
    /// and a later slow turn is timed by the counters.
    @Test func switchingToCountersMidEpisodeEndsItAtTheNextTurn() throws {
        var detector = StallDetector(configuration: DetectorConfiguration(startsInLaunchPhase: false, loopTurnEvidence: .stackRule))
        var events = drive(&detector, ticks: 0..<50, turnsAt: { _ in false })
        #expect(detector.isInEpisode)
        detector.useLoopTurnEvidence(.kernelCounter)
        events += drive(&detector, ticks: 50..<300, turnsAt: { !(101..<250).contains($0) })
        let ended = stalls(events)
        #expect(ended.count == 1, "\(ended.map(\.duration))")
        let stall = try #require(ended.first)
        #expect(abs(stall.startTime - 1.0) < 0.011 && abs(stall.duration - 1.5) < 0.011, "\(stall.startTime) \(stall.duration)")
        #expect(stall.loopTurnEvidence == .kernelCounter)
    }

    // MARK: stack rule

    private func stackRuleDetector() -> StallDetector {
        var detector = StallDetector(configuration: DetectorConfiguration(startsInLaunchPhase: false, loopTurnEvidence: .stackRule))
        detector.setLoopFrames(S.stack("epoll_wait", "event_loop", "main").suffix(2).map { $0 })
        return detector
    }

    /// Loop frames at the same activations as the work's callers (event_loop, main).
    private func work(_ names: String...) -> [SampledFrame] {
        S.stack(names + ["event_loop", "main"]).enumerated().map { index, frame in
            var frame = frame
            // Put event_loop and main at the CFAs the home wait showed.
            let fromOuter = names.count + 2 - 1 - index
            if fromOuter < 2 { frame.cfa = 0x7000 + UInt64(2 - fromOuter) * 0x100 }
            return frame
        }
    }

    @Test func stackRuleAlternatingRequestsAreNoStall() {
        var detector = stackRuleDetector()
        let events = drive(
            &detector, ticks: 0..<600,
            frames: { tick in
                (tick / 5) % 2 == 0 ? self.work("serve_request", "dispatch") : self.work("flush_replies")
            }, turnsAt: { _ in false })
        #expect(events.allSatisfy { $0.snapshot == nil }, "\(events.map(\.kind))")
        #expect(detector.stackRuleTurns > 50)
    }

    @Test func stackRuleHeldFrameIsAStallTimedFromItsFirstSample() throws {
        var detector = stackRuleDetector()
        let events = drive(
            &detector, ticks: 0..<600,
            frames: { tick in
                if (200..<350).contains(tick) { return self.work(tick % 2 == 0 ? "crc32" : "compress", "slow_handler") }
                return (tick / 5) % 2 == 0 ? self.work("serve_request") : self.work("flush_replies")
            }, turnsAt: { _ in false })
        let ended = stalls(events)
        #expect(ended.count == 1)
        let stall = try #require(ended.first)
        #expect(stall.stallFrame?.function == "slow_handler")
        // Samples every 50 ms: the stall is timed from the first sample that held the frame.
        #expect(abs(stall.duration - 1.5) <= 0.05 + 1e-9, "\(stall.duration)")
        #expect(stall.loopTurnEvidence == .stackRule)
    }

    @Test func stackRuleNeedsAFrameOutsideTheLoop() {
        var detector = stackRuleDetector()
        // Busy, but every sample is in the loop's own frames: turning, not stalled.
        let events = drive(&detector, ticks: 0..<300, frames: { _ in self.work() }, turnsAt: { _ in false })
        #expect(events.allSatisfy { $0.snapshot == nil })
    }

    @Test func aCaptureBackInTheLoopIsATurn() {
        var detector = stackRuleDetector()
        var events: [DetectorEvent] = []
        for tick in 0..<300 {
            let now = Double(tick) * 0.01
            events += detector.observe(ThreadObservation(time: now, activity: .running))
            if tick % 20 == 19 { events += detector.noteLoopTurn(at: now) }
            if detector.wantsSample(at: now) {
                events += detector.record(StackSample(time: now, activity: .running, frames: work("serve_request")))
            }
        }
        #expect(events.allSatisfy { $0.snapshot == nil }, "\(events.map(\.kind))")
    }

    // MARK: reasons on a loaded host

    @Test func aHangThatQueuedMoreThanItRanIsStillAHangOncePastTheThresholdOnCPU() {
        let classifier = StallReasonClassifier()
        let loaded = StallStateBreakdown(onCPU: 1.2, runQueueWait: 1.8)
        #expect(classifier.classify(loaded, threshold: 1.0) == .hang)
        #expect(classifier.classify(loaded) == .starved)
        let starved = StallStateBreakdown(onCPU: 0.4, runQueueWait: 1.2)
        #expect(classifier.classify(starved, threshold: 1.0) == .starved)
    }
}

@Suite("HomeWaitTracker")
struct HomeWaitTrackerTests {
    typealias Site = HomeWaitTracker.Site

    @Test func theFirstWaitIsHomeAndDeeperWaitsAreNested() {
        var tracker = HomeWaitTracker()
        let home = Site(pc: 0x10, sp: 0x7fff_0000)
        let nested = Site(pc: 0x10, sp: 0x7ffe_f000)
        #expect(tracker.classify(home, newEntry: true) == .home)
        #expect(tracker.classify(nested, newEntry: true) == .nested)
        #expect(tracker.classify(home, newEntry: true) == .home)
        #expect(tracker.knowsLoop)
    }

    @Test func aShallowerWaitReplacesAHomeSeenOnlyOnce() {
        // Attached while the backend was inside pg_sleep: that wait was seen first.
        var tracker = HomeWaitTracker()
        let pgSleep = Site(pc: 0x10, sp: 0x7ffe_f000)
        let loop = Site(pc: 0x10, sp: 0x7fff_0000)
        #expect(tracker.classify(pgSleep, newEntry: true) == .home)
        #expect(tracker.classify(loop, newEntry: true) == .home)
        #expect(tracker.classify(pgSleep, newEntry: true) == .nested)
    }

    @Test func aWaitEnteredOftenBecomesHome() {
        // A program that polled once high in main before entering its (deeper) loop.
        var tracker = HomeWaitTracker()
        let startup = Site(pc: 0x20, sp: 0x7fff_0000)
        let loop = Site(pc: 0x10, sp: 0x7ffe_0000)
        _ = tracker.classify(startup, newEntry: true)
        var verdicts: [HomeWaitTracker.Verdict] = []
        for _ in 0..<HomeWaitTracker.promotionEntries { verdicts.append(tracker.classify(loop, newEntry: true)) }
        #expect(verdicts.first == .nested)
        #expect(verdicts.last == .home)
    }

    @Test func theSameLongWaitCountsOnce() {
        var tracker = HomeWaitTracker()
        _ = tracker.classify(Site(pc: 1, sp: 0x9000), newEntry: true)
        let nested = Site(pc: 1, sp: 0x8000)
        for _ in 0..<100 { #expect(tracker.classify(nested, newEntry: false) == .nested) }
    }
}

@Suite("TurnLengthHistogram")
struct TurnLengthHistogramTests {
    @Test func bucketsByUpperBoundAndKeepsTheLongest() {
        var histogram = TurnLengthHistogram()
        for seconds in [0.01, 0.025, 0.3, 1.5, 12, -1, .nan] { histogram.add(seconds) }
        #expect(histogram.count == 5)
        #expect(histogram.counts[0] == 2)  // ≤ 25 ms, bound included
        #expect(histogram.counts[4] == 1)  // ≤ 0.5 s
        #expect(histogram.counts[6] == 1)  // ≤ 2.5 s
        #expect(histogram.counts.last == 1)  // > 10 s
        #expect(histogram.longest == 12)
    }
}
