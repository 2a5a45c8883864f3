import DetectionTestSupport
import Testing

@testable import StallDetection

@Suite("StallFrameTracker")
struct StallFrameTrackerTests {
    private typealias S = DetectionScenario

    @Test func innermostCommonFrameIsTheStallFrame() {
        var tracker = StallFrameTracker()
        tracker.add([S.frame("leafA", cfa: 0x100), S.frame("work", cfa: 0x200), S.frame("main", cfa: 0x300)])
        tracker.add([S.frame("leafB", cfa: 0x0f0), S.frame("helper", cfa: 0x180), S.frame("work", cfa: 0x200), S.frame("main", cfa: 0x300)])
        #expect(tracker.stallFrame?.function == "work")
        #expect(tracker.stallFrame?.cfa == 0x200)
    }

    @Test func recursionIsToldApartByFrameAddress() {
        var tracker = StallFrameTracker()
        tracker.add([S.frame("f", cfa: 0x100), S.frame("f", cfa: 0x200), S.frame("f", cfa: 0x300), S.frame("main", cfa: 0x400)])
        tracker.add([S.frame("g", cfa: 0x050), S.frame("f", cfa: 0x200), S.frame("f", cfa: 0x300), S.frame("main", cfa: 0x400)])
        tracker.add([S.frame("f", cfa: 0x150), S.frame("f", cfa: 0x200), S.frame("f", cfa: 0x300), S.frame("main", cfa: 0x400)])
        // f@0x100 and f@0x150 are different activations; f@0x200 is in every sample.
        #expect(tracker.stallFrame == S.frame("f", cfa: 0x200))
    }

    @Test func sameFunctionAtAnotherFrameAddressIsNotTheSameActivation() {
        var tracker = StallFrameTracker()
        tracker.add([S.frame("loop", cfa: 0x100), S.frame("main", cfa: 0x300)])
        tracker.add([S.frame("loop", cfa: 0x180), S.frame("main", cfa: 0x300)])  // returned and called again
        #expect(tracker.stallFrame?.function == "main")
    }

    @Test func reportsTheLatestDetailsOfTheFrame() {
        var tracker = StallFrameTracker()
        tracker.add([S.frame("spin", cfa: 0x100, address: 0x1000)])
        tracker.add([S.frame("spin", cfa: 0x100, address: 0x1008)])
        #expect(tracker.stallFrame?.address == 0x1008)
    }

    @Test func noCommonFrameGivesNil() {
        var tracker = StallFrameTracker()
        #expect(tracker.stallFrame == nil)
        tracker.add([S.frame("a", cfa: 1)])
        tracker.add([S.frame("b", cfa: 2)])
        #expect(tracker.stallFrame == nil)
        tracker.add([S.frame("a", cfa: 1)])
        #expect(tracker.stallFrame == nil)  // once gone, a frame never comes back
    }

    @Test func emptyCapturesDoNotEraseIt() {
        var tracker = StallFrameTracker()
        tracker.add([S.frame("a", cfa: 1)])
        tracker.add([])
        #expect(tracker.stallFrame?.function == "a")
        #expect(tracker.sampleCount == 1)
    }

    /// The loop left its wait and was sampled before it called the handler that then stalled:
    /// the handler, there from 40 ms on, is the stall frame, not the loop's dispatch function.
    @Test func aFrameEnteredJustAfterTheStartCountsAsPresentThroughout() {
        var tracker = StallFrameTracker(start: 10, entryGrace: 0.25)
        tracker.add([S.frame("run_once", cfa: 0x200), S.frame("main", cfa: 0x300)], at: 10.01)
        for step in 0..<20 {
            tracker.add(
                [S.frame("leaf\(step % 3)", cfa: 0x080), S.frame("handler", cfa: 0x100), S.frame("run_once", cfa: 0x200), S.frame("main", cfa: 0x300)],
                at: 10.04 + Double(step) * 0.05)
        }
        #expect(tracker.stallFrame == S.frame("handler", cfa: 0x100))
    }

    /// Past the grace a new frame is later work, not the stall's; and a frame that left once
    /// is out for good, grace or not.
    @Test func aFrameEnteredLateOrLeftOnceIsNotTheStallFrame() {
        var late = StallFrameTracker(start: 10, entryGrace: 0.25)
        late.add([S.frame("run_once", cfa: 0x200), S.frame("main", cfa: 0x300)], at: 10.01)
        late.add([S.frame("run_once", cfa: 0x200), S.frame("main", cfa: 0x300)], at: 10.2)
        for step in 0..<10 {
            late.add([S.frame("handler", cfa: 0x100), S.frame("run_once", cfa: 0x200), S.frame("main", cfa: 0x300)], at: 10.3 + Double(step) * 0.05)
        }
        #expect(late.stallFrame == S.frame("run_once", cfa: 0x200))

        var left = StallFrameTracker(start: 10, entryGrace: 0.25)
        left.add([S.frame("a", cfa: 0x100), S.frame("main", cfa: 0x300)], at: 10.01)
        left.add([S.frame("b", cfa: 0x100), S.frame("main", cfa: 0x300)], at: 10.05)
        left.add([S.frame("a", cfa: 0x100), S.frame("main", cfa: 0x300)], at: 10.5)
        #expect(left.stallFrame == S.frame("main", cfa: 0x300))
    }

    /// The handler returned and the loop was sampled once more before it reached its wait:
    /// the ended episode's frame is still the handler; while it runs, and with the sample
    /// earlier than the grace, the strict rule holds.
    @Test func aFrameLeftJustBeforeTheEndCountsAsPresentThroughout() {
        var tracker = StallFrameTracker(start: 10, entryGrace: 0.25, exitGrace: 0.25)
        for step in 0..<20 {
            tracker.add([S.frame("handler", cfa: 0x100), S.frame("run_once", cfa: 0x200), S.frame("main", cfa: 0x300)], at: 10 + Double(step) * 0.05)
        }
        tracker.add([S.frame("handle", cfa: 0x180), S.frame("run_once", cfa: 0x200), S.frame("main", cfa: 0x300)], at: 11.0)
        #expect(tracker.stallFrame(endingAt: 11.05) == S.frame("handler", cfa: 0x100))
        #expect(tracker.stallFrame == S.frame("run_once", cfa: 0x200))
        // Left 0.3 s before the end: not the last moment, the frame is out.
        #expect(tracker.stallFrame(endingAt: 11.3) == S.frame("run_once", cfa: 0x200))
        // An episode whose every sample falls in the grace keeps the strict rule.
        var short = StallFrameTracker(start: 9, entryGrace: 0.25, exitGrace: 0.25)
        short.add([S.frame("a", cfa: 0x100), S.frame("main", cfa: 0x300)], at: 10.01)
        short.add([S.frame("b", cfa: 0x100), S.frame("main", cfa: 0x300)], at: 10.05)
        #expect(short.stallFrame(endingAt: 10.1) == S.frame("main", cfa: 0x300))
    }

    @Test func staysRightAfterTheRingWrapped() throws {
        var scenario = DetectionScenario.inLoop(configuration: DetectorConfiguration(ringCapacity: 5))
        scenario.stack = [S.frame("x", cfa: 0x100), S.frame("work", cfa: 0x200), S.frame("main", cfa: 0x300)]
        scenario.run(.running, for: 0.4)  // past the entry grace (a quarter of the 1 s threshold)
        scenario.stack = [
            S.frame("y", cfa: 0x080), S.frame("inner", cfa: 0x150), S.frame("work", cfa: 0x200), S.frame("main", cfa: 0x300),
        ]
        scenario.run(.running, for: 1.5)
        scenario.run(.idle, for: 0.1)
        let ended = try #require(scenario.ended.first)
        #expect(ended.samples.count == 5)
        // The ring alone would say "y" (or "inner"); the first samples rule both out.
        #expect(ended.stallFrame == S.frame("work", cfa: 0x200))
    }
}
