import StallDetection
import Testing

@testable import StallMonitoring

/// The loop probe's iterations and wait times, read against a fake detector: an episode ends
/// at the first wait since the last probe, the next begins when the last wait returned, and
/// the detector's clock never goes back.
@Suite struct LoopProbeInterpreterTests {
    /// Takes edges as the detector would: an idle edge ends the episode, a busy one begins one.
    final class FakeDetector {
        var isInEpisode = false
        var fed: [ThreadObservation] = []
        var turns: UInt64 = 0

        func feed(_ observation: ThreadObservation) {
            fed.append(observation)
            isInEpisode = observation.activity.isBusy
        }
    }

    /// A probe state at `iterations`, with wait number n's (wait, woke) times in seconds.
    static func state(_ iterations: UInt64, inWait: Bool = false, waits: [UInt64: (Double, Double)] = [:]) -> LoopProbeReader.State {
        var ring = [LoopProbeReader.Wait](repeating: LoopProbeReader.Wait(waitNanos: 0, wokeNanos: 0), count: LoopProbeReader.ringSize)
        for (number, (wait, woke)) in waits {
            ring[Int(number % UInt64(LoopProbeReader.ringSize))] = LoopProbeReader.Wait(
                waitNanos: UInt64(wait * 1e9), wokeNanos: UInt64(woke * 1e9))
        }
        return LoopProbeReader.State(iterations: iterations, inWait: inWait, waits: ring)
    }

    static func apply(
        _ edges: LoopProbeInterpreter, _ state: LoopProbeReader.State, at time: Double, _ activity: ThreadActivity,
        _ detector: FakeDetector
    ) -> ThreadObservation {
        let observation = ThreadObservation(time: time, activity: activity, cpuNanos: 7_000, runQueueNanos: 300)
        return edges.apply(
            state, to: observation, isInEpisode: { detector.isInEpisode }, addTurns: { detector.turns += $0 },
            feed: detector.feed)
    }

    /// The first read only starts the count; gone or stopped, the turns still count.
    @Test func turnsAreTheIterationsSinceTheLastRead() {
        let edges = LoopProbeInterpreter(reader: nil)
        let detector = FakeDetector()
        _ = Self.apply(edges, Self.state(5, inWait: true), at: 1, .idle, detector)
        #expect(detector.turns == 0)
        _ = Self.apply(edges, Self.state(8, inWait: true), at: 2, .idle, detector)
        #expect(detector.turns == 3)
        _ = Self.apply(edges, Self.state(8, inWait: true), at: 3, .idle, detector)
        #expect(detector.turns == 3)
        let gone = Self.apply(edges, Self.state(10), at: 4, .gone, detector)
        #expect(detector.turns == 5)
        #expect(gone.activity == .gone)
        #expect(edges.lastIterations == 10)
        #expect(detector.fed.isEmpty, "no edges for a gone thread, none while it waits")
        #expect(edges.read() == nil, "no probe to read")
    }

    /// In an episode, two turns since the last probe: the episode ended at wait 5's start, and
    /// the turn /proc shows began when wait 6 returned; both fed with the probe's counts.
    @Test func anEpisodeEndsAtTheNextWaitAndTheNextBeginsAtTheLastWake() {
        let edges = LoopProbeInterpreter(reader: nil)
        let detector = FakeDetector()
        detector.isInEpisode = true
        _ = Self.apply(edges, Self.state(4), at: 1.0, .running, detector)
        #expect(detector.fed.isEmpty, "already in an episode: no start to date")
        let result = Self.apply(edges, Self.state(6, waits: [5: (1.2, 1.3), 6: (1.35, 1.4)]), at: 1.5, .running, detector)
        #expect(detector.fed.map(\.time) == [1.2, 1.4])
        #expect(detector.fed.map(\.activity) == [.idle, .running])
        #expect(detector.fed.allSatisfy { $0.cpuNanos == 7_000 && $0.runQueueNanos == 300 })
        #expect(result.activity == .running)
        #expect(edges.lastFedTime == 1.4)
    }

    /// The probe's own word on the wait: in it is idle whatever /proc says; just out of it,
    /// /proc's idle call is stale. A busy /proc activity dates the start as itself.
    @Test func theProbeSaysWhetherTheThreadWaits() {
        let edges = LoopProbeInterpreter(reader: nil)
        let detector = FakeDetector()
        #expect(Self.apply(edges, Self.state(3, inWait: true), at: 1, .running, detector).activity == .idle)
        #expect(Self.apply(edges, Self.state(3, waits: [3: (0.5, 1.5)]), at: 2, .idle, detector).activity == .running)
        #expect(detector.fed.last?.activity == .running, "an idle /proc call dates a running start")
        let detector2 = FakeDetector()
        _ = Self.apply(LoopProbeInterpreter(reader: nil), Self.state(3, waits: [3: (0.5, 1.5)]), at: 2, .lockWait, detector2)
        #expect(detector2.fed.map(\.activity) == [.lockWait])
        // Stopped: as /proc says, and nothing fed.
        let detector3 = FakeDetector()
        let stopped = Self.apply(LoopProbeInterpreter(reader: nil), Self.state(3, inWait: true), at: 2, .stopped, detector3)
        #expect(stopped.activity == .stopped)
        #expect(detector3.fed.isEmpty)
    }

    /// An edge no later than the last fed time, at or after the probe's, or unset (0) is not
    /// fed; nor the wait after more turns than the ring holds (overwritten since).
    @Test func edgesAreFedOnlyBetweenTheLastFedTimeAndTheProbe() {
        let edges = LoopProbeInterpreter(reader: nil)
        let detector = FakeDetector()
        edges.fed(at: 2.0)
        _ = Self.apply(edges, Self.state(1, waits: [1: (0.5, 1.5)]), at: 2.5, .running, detector)
        #expect(detector.fed.isEmpty, "before the last fed time")
        _ = Self.apply(edges, Self.state(2, waits: [2: (2.6, 3.0)]), at: 2.9, .running, detector)
        #expect(detector.fed.isEmpty, "after the probe")
        _ = Self.apply(edges, Self.state(3), at: 3.5, .running, detector)
        #expect(detector.fed.isEmpty, "no time recorded")
        detector.isInEpisode = true
        let far = UInt64(LoopProbeReader.ringSize) + 4
        _ = Self.apply(edges, Self.state(3 + far, inWait: true, waits: [4: (3.6, 3.7)]), at: 4, .idle, detector)
        #expect(detector.fed.isEmpty, "more turns than the ring holds")
        #expect(detector.turns == 1 + 1 + far)
    }
}
