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

    @Test func staysRightAfterTheRingWrapped() throws {
        var scenario = DetectionScenario.inLoop(configuration: DetectorConfiguration(ringCapacity: 5))
        scenario.stack = [S.frame("x", cfa: 0x100), S.frame("work", cfa: 0x200), S.frame("main", cfa: 0x300)]
        scenario.run(.running, for: 0.05)  // one sample
        scenario.stack = [
            S.frame("y", cfa: 0x080), S.frame("inner", cfa: 0x150), S.frame("work", cfa: 0x200), S.frame("main", cfa: 0x300),
        ]
        scenario.run(.running, for: 1.5)
        scenario.run(.idle, for: 0.1)
        let ended = try #require(scenario.ended.first)
        #expect(ended.samples.count == 5)
        // The ring alone would say "y" (or "inner"); the first sample rules both out.
        #expect(ended.stallFrame == S.frame("work", cfa: 0x200))
    }
}
