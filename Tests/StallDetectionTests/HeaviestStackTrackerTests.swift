import DetectionTestSupport
import Testing

@testable import StallDetection

@Suite("HeaviestStackTracker")
struct HeaviestStackTrackerTests {
    private func add(_ tops: [String], to tracker: inout HeaviestStackTracker) {
        for (index, top) in tops.enumerated() {
            tracker.add(DetectionScenario.stack(top, "caller\(index)", "main"), at: Double(index))
        }
    }

    @Test func mostSamplesWins() {
        var tracker = HeaviestStackTracker()
        add(["a", "b", "a", "c", "a", "b"], to: &tracker)
        let heaviest = tracker.heaviest
        #expect(heaviest?.topFunction == "a")
        #expect(heaviest?.sampleCount == 3)
        #expect(heaviest?.totalSamples == 6)
    }

    @Test func tiesGoToTheMostRecentGroup() {
        var tracker = HeaviestStackTracker()
        add(["a", "b", "a", "b"], to: &tracker)
        #expect(tracker.heaviest?.topFunction == "b")
        var other = HeaviestStackTracker()
        add(["a", "b", "b", "a"], to: &other)
        #expect(other.heaviest?.topFunction == "a")
    }

    @Test func theWinningGroupsMostRecentFullStackIsReturned() {
        var tracker = HeaviestStackTracker()
        add(["a", "a", "b", "a", "b"], to: &tracker)
        // Samples of "a" were at indices 0, 1, 3: the stack of index 3 represents the group.
        #expect(tracker.heaviest?.frames.map(\.function) == ["a", "caller3", "main"])
        #expect(tracker.heaviest?.sampleTime == 3)
    }

    @Test func groupsAreKeyedByModuleToo() {
        var tracker = HeaviestStackTracker()
        tracker.add([SampledFrame(function: "run", module: "libA.so")], at: 0)
        tracker.add([SampledFrame(function: "run", module: "libB.so")], at: 1)
        tracker.add([SampledFrame(function: "run", module: "libA.so")], at: 2)
        #expect(tracker.heaviest?.sampleCount == 2)
        #expect(tracker.heaviest?.frames.first?.module == "libA.so")
    }

    @Test func emptyStacksAreIgnoredAndResetClears() {
        var tracker = HeaviestStackTracker()
        tracker.add([], at: 0)
        #expect(tracker.heaviest == nil)
        add(["a"], to: &tracker)
        tracker.reset()
        #expect(tracker.heaviest == nil)
        #expect(tracker.totalSamples == 0)
    }

    @Test func detectorSnapshotsUseTheWholeEpisodeEvenAfterTheRingWrapped() throws {
        var scenario = DetectionScenario.inLoop(configuration: DetectorConfiguration(ringCapacity: 10))
        scenario.stack = DetectionScenario.stack("early", "main")
        scenario.run(.running, for: 0.8)  // 16 samples
        scenario.stack = DetectionScenario.stack("late", "main")
        scenario.run(.running, for: 0.5)  // 10 samples: the ring now holds only these
        scenario.run(.idle, for: 0.1)
        let ended = try #require(scenario.ended.first)
        #expect(ended.samples.count == 10)
        #expect(ended.samples.allSatisfy { $0.frames.first?.function == "late" })
        #expect(ended.droppedSampleCount == 16)
        #expect(ended.heaviestStack?.topFunction == "early")
        #expect(ended.heaviestStack?.sampleCount == 16)
        #expect(ended.callTree.count == 10)  // the tree covers the ring only
    }
}
