import DetectionTestSupport
import Testing

@testable import StallDetection

@Suite("StallDetector annealing")
struct StallDetectorAnnealingTests {
    /// Ages (seconds since the episode began, no stops here) at which the events came.
    private func ages(_ scenario: DetectionScenario, start: Double) -> [(kind: String, age: Double)] {
        scenario.stallEvents.map { ($0.event.kind, $0.time - start) }
    }

    @Test func twentySecondUnchangedStallIsRecapturedAtFibonacciMultiples() {
        var scenario = DetectionScenario.inLoop()
        scenario.run(.running, for: 20)
        scenario.run(.idle, for: 0.1)
        let timeline = ages(scenario, start: 0.5)
        #expect(timeline.map(\.kind) == ["stallStarted"] + Array(repeating: "stallUpdated", count: 5) + ["stallEnded"])
        // Detected at 1 s, then threshold × 1, 1, 2, 3, 5 later: ages 2, 3, 5, 8, 13; 21 > 20.
        let expected: [Double] = [1, 2, 3, 5, 8, 13, 20]
        for (event, age) in zip(timeline, expected) {
            #expect(abs(event.age - age) < 1e-6, "\(event.kind) at \(event.age), expected \(age)")
        }
        #expect(scenario.updated.allSatisfy { $0.trigger == .annealing && $0.ongoing })
        #expect(scenario.updated.map(\.revision) == [1, 2, 3, 4, 5])
        #expect(scenario.ended.first?.revision == 6)
    }

    @Test func annealingCadenceScalesWithTheThreshold() {
        var scenario = DetectionScenario.inLoop(configuration: DetectorConfiguration(threshold: 0.5))
        scenario.run(.running, for: 7)
        let updateAges = scenario.events.filter { $0.event.kind == "stallUpdated" }.map { $0.time - 0.5 }
        let expected: [Double] = [1.0, 1.5, 2.5, 4.0, 6.5]
        #expect(updateAges.count == expected.count)
        for (age, want) in zip(updateAges, expected) {
            #expect(abs(age - want) < 1e-6)
        }
    }

    @Test func withoutAnnealingTheStallIsRecapturedEveryThreshold() {
        var scenario = DetectionScenario.inLoop(configuration: DetectorConfiguration(annealing: false))
        scenario.run(.running, for: 5.5)
        let updateAges = scenario.events.filter { $0.event.kind == "stallUpdated" }.map { $0.time - 0.5 }
        #expect(updateAges.count == 4)
        for (age, want) in zip(updateAges, [2.0, 3.0, 4.0, 5.0]) {
            #expect(abs(age - want) < 1e-6)
        }
    }

    @Test func stoppedTimeDelaysRecapturesToo() {
        var scenario = DetectionScenario.inLoop()
        scenario.run(.running, for: 1.5)
        scenario.run(.stopped, for: 10)
        scenario.run(.running, for: 0.6)
        // Age 2.0 is reached 0.5 s after resuming, at 0.5 + 1.5 + 10 + 0.5.
        let updateTimes = scenario.events.filter { $0.event.kind == "stallUpdated" }.map(\.time)
        #expect(updateTimes.count == 1)
        #expect(abs((updateTimes.first ?? 0) - 12.5) < 1e-6)
    }

    @Test func changedHeaviestStackTriggersAnUpdateAndRestartsTheSequence() throws {
        var scenario = DetectionScenario.inLoop()
        scenario.stack = DetectionScenario.stack("parse", "main")
        scenario.run(.running, for: 1.3)  // 26 samples of parse, stall detected at age 1.0
        scenario.stack = DetectionScenario.stack("render", "main")
        scenario.run(.running, for: 6.7)  // render overtakes with its 27th sample at age 2.6
        let timeline = ages(scenario, start: 0.5)
        let updates = scenario.updated
        #expect(timeline.map(\.kind) == ["stallStarted"] + Array(repeating: "stallUpdated", count: 5))
        let expected: [(StallSnapshotTrigger, Double, String)] = [
            (.annealing, 2.0, "parse"),
            (.stackChanged, 2.6, "render"),
            (.annealing, 3.6, "render"),  // restarted: +1, +1, +2 …
            (.annealing, 4.6, "render"),
            (.annealing, 6.6, "render"),
        ]
        for ((snapshot, event), (trigger, age, top)) in zip(zip(updates, timeline.dropFirst()), expected) {
            #expect(snapshot.trigger == trigger)
            #expect(abs(event.age - age) < 1e-6, "\(trigger) at \(event.age), expected \(age)")
            #expect(snapshot.heaviestStack?.topFunction == top)
        }
        let changed = try #require(updates.first { $0.trigger == .stackChanged })
        #expect(changed.heaviestStack?.sampleCount == 27)
        #expect(changed.heaviestStack?.totalSamples == 53)
        #expect(changed.stallFrame?.function == "main")
    }

    @Test func alternatingStacksDoNotRewriteTheReportOnEverySample() {
        var scenario = DetectionScenario.inLoop()
        for index in 0..<60 {  // 3 s, switching stack every 50 ms (one sample each)
            scenario.stack = DetectionScenario.stack(index % 2 == 0 ? "a" : "b", "main")
            scenario.run(.running, for: 0.05)
        }
        let changes = scenario.updated.filter { $0.trigger == .stackChanged }
        // A tie never counts as a change, so once one of two equal stacks is reported the other
        // can at most draw level with it: one change, not one per sample.
        #expect(changes.count == 1)
        // That change (age 1.3, t = 1.8) restarts the sequence: one annealing update at 2.3; 3.3 is
        // past the end.
        #expect(scenario.updated.map(\.trigger) == [.stackChanged, .annealing])
    }

    /// `a` for 1.2 s (24 samples), then `b`, which overtakes with its 25th sample at t = 2.9;
    /// the annealing update at age 2.0 (t = 2.5) still showed `a`.
    private func changeTimes(spacing: Double) -> [Double] {
        var scenario = DetectionScenario.inLoop(configuration: DetectorConfiguration(minimumUpdateSpacing: spacing))
        scenario.stack = DetectionScenario.stack("a", "main")
        scenario.run(.running, for: 1.2)
        scenario.stack = DetectionScenario.stack("b", "main")
        scenario.run(.running, for: 1.6)
        return scenario.events.filter { $0.event.snapshot?.trigger == .stackChanged }.map(\.time)
    }

    @Test func stackChangeUpdatesRespectTheMinimumSpacing() {
        let prompt = changeTimes(spacing: 0.25)
        #expect(prompt.count == 1)
        #expect(abs((prompt.first ?? 0) - 2.9) < 1e-6)
        // 0.6 s after the annealing update at 2.5: held back to the first sample at or after 3.1.
        let spaced = changeTimes(spacing: 0.6)
        #expect(spaced.count == 1)
        #expect(abs((spaced.first ?? 0) - 3.1) < 1e-6)
    }
}
