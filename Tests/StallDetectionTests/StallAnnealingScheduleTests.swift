import DetectionTestSupport
import Testing

@testable import StallDetection

@Suite("StallAnnealingSchedule, clocks and activities")
struct StallAnnealingScheduleTests {
    @Test func fibonacciGapsFromTheThreshold() {
        let schedule = StallAnnealingSchedule(base: 1, unit: 1, fibonacci: true)
        #expect(schedule.upcomingAges(7) == [2, 3, 5, 8, 13, 21, 34])
        let restarted = { () -> StallAnnealingSchedule in
            var copy = schedule
            copy.restart(at: 2.5)
            return copy
        }()
        #expect(restarted.upcomingAges(4) == [3.5, 4.5, 6.5, 9.5])
        #expect(StallAnnealingSchedule(base: 1, unit: 1, fibonacci: false).upcomingAges(3) == [2, 3, 4])
    }

    @Test func oneAdvanceCoversEverySkippedCapture() {
        var schedule = StallAnnealingSchedule(base: 1, unit: 1, fibonacci: true)
        let early = schedule.advance(pastAge: 1.5)
        #expect(!early)
        let late = schedule.advance(pastAge: 6)
        #expect(late)
        #expect(schedule.nextAge == 8)
    }

    @Test func fakeClockMovesOnlyForwardWhenTold() {
        let clock = FakeClock(start: 5)
        #expect(clock.now() == 5)
        clock.advance(by: 0.25)
        #expect(clock.now() == 5.25)
        clock.advance(by: -1)
        clock.set(to: 1)
        #expect(clock.now() == 5.25)
        clock.set(to: 7)
        let asProtocol: any MonotonicClock = clock
        #expect(asProtocol.now() == 7)
    }

    @Test func detectorDrivenByAFakeClock() {
        let clock = FakeClock()
        var detector = StallDetector(configuration: DetectorConfiguration(startsInLaunchPhase: false))
        var kinds: [String] = []
        for step in 0..<200 {
            let activity: ThreadActivity = step < 20 || step >= 150 ? .idle : .running
            kinds += detector.observe(ThreadObservation(time: clock.now(), activity: activity)).map(\.kind)
            clock.advance(by: 0.01)
        }
        #expect(kinds == ["stallStarted", "stallEnded", "episodeEnded"])
    }

    @Test func busyActivities() {
        #expect(ThreadActivity.allCases.filter(\.isBusy) == [.running, .lockWait, .ioWait, .blockedCall])
    }
}
