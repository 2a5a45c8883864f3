import Testing

@testable import StallDetection

@Suite("StallStateAccumulator and StallStateBreakdown")
struct StallStateAccumulatorTests {
    @Test func runningIsSplitByTheSummedSchedstatDeltas() {
        var accumulator = StallStateAccumulator()
        // Tick-granular counters: the first interval shows no change, the second all of it.
        let a = ThreadObservation(time: 0, activity: .running, cpuNanos: 1_000, runQueueNanos: 500)
        let b = ThreadObservation(time: 0.01, activity: .running, cpuNanos: 1_000, runQueueNanos: 500)
        let c = ThreadObservation(time: 0.02, activity: .lockWait, cpuNanos: 1_000 + 15_000_000, runQueueNanos: 500 + 5_000_000)
        let d = ThreadObservation(time: 0.05, activity: .idle, cpuNanos: 20_000_000, runQueueNanos: 6_000_000)
        accumulator.add(from: a, to: b)
        accumulator.add(from: b, to: c)
        accumulator.add(from: c, to: d)
        let breakdown = accumulator.breakdown
        #expect(abs(breakdown.onCPU - 0.015) < 1e-12)
        #expect(abs(breakdown.runQueueWait - 0.005) < 1e-12)
        #expect(abs(breakdown.lockWait - 0.03) < 1e-12)
        #expect(abs(breakdown.busy - 0.05) < 1e-12)
    }

    @Test func withoutSchedstatRunningIsOnCPU() {
        var accumulator = StallStateAccumulator()
        accumulator.add(seconds: 2, activity: .running)
        #expect(accumulator.breakdown.onCPU == 2)
        #expect(accumulator.breakdown.runQueueWait == 0)
    }

    @Test func countersGoingBackwardsContributeNothing() {
        var accumulator = StallStateAccumulator()
        let a = ThreadObservation(time: 0, activity: .running, cpuNanos: 1_000_000, runQueueNanos: 9_000_000)
        let b = ThreadObservation(time: 1, activity: .running, cpuNanos: 2_000_000, runQueueNanos: 10)
        accumulator.add(from: a, to: b)
        #expect(accumulator.breakdown.onCPU == 1)
    }

    @Test func breakdownAccessors() {
        let breakdown = StallStateBreakdown(onCPU: 1, runQueueWait: 1, lockWait: 1, ioWait: 0.5, blockedCall: 0.5, stopped: 3)
        #expect(breakdown.running == 2)
        #expect(breakdown.busy == 4)
        #expect(breakdown.total == 7)
        #expect(breakdown.seconds(for: .running) == 2)
        #expect(breakdown.seconds(for: .stopped) == 3)
        #expect(breakdown.seconds(for: .idle) == 0)
        #expect(breakdown.fractionOfBusy(\.lockWait) == 0.25)
        #expect(StallStateBreakdown().fractionOfBusy(\.onCPU) == 0)
    }
}
