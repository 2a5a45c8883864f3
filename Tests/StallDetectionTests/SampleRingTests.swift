import DetectionTestSupport
import Testing

@testable import StallDetection

@Suite("SampleRing")
struct SampleRingTests {
    private func sample(_ time: Double) -> StackSample {
        StackSample(time: time, activity: .running, frames: DetectionScenario.stack("f"))
    }

    @Test func dropsTheOldestWhenFull() {
        var ring = SampleRing(capacity: 3)
        for time in 0..<3 { #expect(ring.append(sample(Double(time))) == nil) }
        #expect(ring.isFull)
        let dropped = ring.append(sample(3))
        #expect(dropped?.time == 0)
        #expect(ring.samples.map(\.time) == [1, 2, 3])
        #expect(ring.oldest?.time == 1)
        #expect(ring.newest?.time == 3)
        #expect(ring.appendedCount == 4)
        #expect(ring.droppedCount == 1)
        #expect(Array(ring).count == 3)
    }

    @Test func removeAllResetsCounts() {
        var ring = SampleRing(capacity: 2)
        ring.append(sample(0))
        ring.append(sample(1))
        ring.append(sample(2))
        ring.removeAll()
        #expect(ring.isEmpty)
        #expect(ring.droppedCount == 0)
    }

    @Test func capacityIsAtLeastOne() {
        var ring = SampleRing(capacity: 0)
        ring.append(sample(0))
        ring.append(sample(1))
        #expect(ring.capacity == 1)
        #expect(ring.samples.map(\.time) == [1])
    }

    @Test func defaultCapacityHoldsAMinuteOfSamples() {
        let configuration = DetectorConfiguration()
        #expect(configuration.ringCapacity == 1200)
        #expect(abs(Double(configuration.ringCapacity) * configuration.sampleInterval - 60) < 1e-9)
    }
}
