import ReportTestSupport
import Testing

@testable import StallReports

@Suite("Stall summary line")
struct StallSummaryLineTests {
    private typealias F = ReportFixtures

    @Test func lockStallNamesTheProgramsFunction() {
        let report = StallReport(snapshot: F.lockEnded(), context: F.context(occurrence: 3))
        #expect(
            StallSummaryLine.render(report, reportPath: "/var/lib/stallagent/r.txt")
                == "stall #1 0xdead10cc lock 1.30 s in lock_contention (stall-fixtures[1234], loop, seen 3×) → /var/lib/stallagent/r.txt"
        )
    }

    @Test func marksOngoingTerminatedAndDied() {
        let ongoing = StallReport(snapshot: F.hangStarted(), context: F.context())
        #expect(StallSummaryLine.render(ongoing, reportPath: nil).hasSuffix("in work (stall-fixtures[1234], loop, ongoing)"))
        let killed = StallReport(snapshot: F.diedWhileHanging(), context: F.context(termination: "terminated by stallagent"))
        #expect(
            StallSummaryLine.render(killed, reportPath: nil)
                == "stall #1 0xdeadfa11 died (hang) 1.60 s in work (stall-fixtures[1234], loop, terminated, died)")
    }
}
