import StallProc
import Testing

@testable import StallMonitoring

/// The main thread's CPU and run-queue time only grow: a schedstat that cannot be read keeps
/// the last, and whether the thread ran is said against it.
@Suite struct ProbeReadingsTests {
    static func schedstat(_ cpu: UInt64, _ runQueue: UInt64) -> ProcSchedstat? {
        ProcSchedstat.parse("\(cpu) \(runQueue) 12\n")
    }

    @Test func anUnreadableSchedstatKeepsTheLastCounts() {
        var readings = ProbeReadings()
        #expect(readings.cpuNanos == 0)
        readings.took(Self.schedstat(5_000, 700))
        #expect(readings.cpuNanos == 5_000)
        #expect(readings.runQueueNanos == 700)
        readings.took(nil)
        #expect(readings.cpuNanos == 5_000)
        #expect(readings.runQueueNanos == 700)
        readings.took(Self.schedstat(9_000, 800))
        #expect(readings.cpuNanos == 9_000)
        #expect(readings.runQueueNanos == 800)
    }

    @Test func ranIsMoreCPUTimeThanTheLastTaken() {
        var readings = ProbeReadings()
        readings.took(Self.schedstat(5_000, 700))
        #expect(readings.ran(Self.schedstat(5_001, 700)))
        #expect(!readings.ran(Self.schedstat(5_000, 900)), "waiting to run is not running")
        #expect(!readings.ran(nil), "unknown")
        // Asking takes nothing.
        #expect(readings.cpuNanos == 5_000)
    }
}
