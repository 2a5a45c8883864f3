import ReportTestSupport
import Testing

@testable import StallMonitoring
@testable import StallDetection
import StallReports

/// What the monitor keeps of each stall, and what the summary says of it when it ends, from
/// stalls driven through a real detector (`ReportFixtures`).
@Suite struct StallLedgerTests {
    static let paths = ReportPaths(text: "/reports/stall-1.txt", json: "/reports/stall-1.json")

    /// A fingerprint seen before gets no report of its own: its summary line points nowhere,
    /// whatever was written of it. A stall nobody asked the book about gets its report.
    @Test func aStallSeenBeforeHasNoReportPath() {
        var ledger = StallLedger()
        #expect(ledger.shouldWriteReport(1))
        #expect(ledger.occurrence(1) == 1)
        ledger.noteWritten(1, paths: Self.paths)
        #expect(ledger.summaryPath(1) == "/reports/stall-1.txt")

        ledger.open(2, decision: StallFingerprintBook.Decision(fingerprint: "f00d", occurrence: 3, shouldWriteReport: false))
        #expect(!ledger.shouldWriteReport(2))
        #expect(ledger.occurrence(2) == 3)
        ledger.noteWritten(2, paths: Self.paths)
        #expect(ledger.summaryPath(2) == nil)
    }

    /// The latency the summary gives is to the first revision on disk; the clock is not even
    /// read for later ones.
    @Test func theFirstWriteIsKept() {
        var ledger = StallLedger()
        var reads = 0
        func clock() -> Double {
            reads += 1
            return 99
        }
        ledger.noteFirstWritten(1, at: 10)
        ledger.noteFirstWritten(1, at: clock())
        #expect(ledger.firstWritten[1] == 10)
        #expect(reads == 0)
    }

    /// The summary entry of an ended lock wait: its occurrence, report, first write, lock
    /// owner and whether `--kill-after` ended it (a refused kill did not).
    @Test func theSummaryEntryTakesWhatTheLedgerKept() {
        let snapshot = ReportFixtures.lockEnded()
        let report = StallReport(snapshot: snapshot, context: ReportFixtures.context())
        var ledger = StallLedger()
        let id = snapshot.id
        ledger.open(id, decision: StallFingerprintBook.Decision(fingerprint: "f00d", occurrence: 2, shouldWriteReport: true))
        ledger.noteWritten(id, paths: Self.paths)
        ledger.noteFirstWritten(id, at: 5)
        ledger.setLockOwner(ReportFixtures.holder, for: id)
        ledger.noteTermination("SIGTERM after 1.0 s", for: id)
        let stall = ledger.stall(snapshot, report)
        #expect(stall.id == id)
        #expect(stall.occurrence == 2)
        #expect(stall.reportPath == "/reports/stall-1.txt")
        #expect(stall.firstWrittenMonotonic == 5)
        #expect(stall.lockOwnerName == "holder")
        #expect(stall.terminated)
        #expect(stall.topFunction == StallLedger.culprit(snapshot, report))
        #expect(!stall.deadlock)
        ledger.noteTermination(ReportTermination.refused("operation not permitted"), for: id)
        #expect(!ledger.stall(snapshot, report).terminated)
    }

    /// Nothing of an ended stall stays behind; the others are untouched.
    @Test func closingAStallForgetsItAlone() {
        var ledger = StallLedger()
        for id in [1, 2] {
            ledger.open(id, decision: StallFingerprintBook.Decision(fingerprint: "f\(id)", occurrence: id, shouldWriteReport: true))
            ledger.noteWritten(id, paths: Self.paths)
            ledger.noteFirstWritten(id, at: Double(id))
            ledger.setLockOwner(ReportFixtures.holder, for: id)
            ledger.noteTermination("SIGKILL", for: id)
        }
        ledger.close(1)
        #expect(ledger.decisions.keys.sorted() == [2])
        #expect(ledger.reportPaths.keys.sorted() == [2])
        #expect(ledger.firstWritten.keys.sorted() == [2])
        #expect(ledger.lockOwners.keys.sorted() == [2])
        #expect(ledger.terminations.keys.sorted() == [2])
        #expect(ledger.occurrence(1) == 1)
    }

    /// The stall line names the report's culprit, or the heaviest stack's top without a report;
    /// a deadlock is said as one whatever the stall's cause.
    @Test func theLineNamesTheCulpritAndADeadlock() {
        let hang = ReportFixtures.hangEnded()
        let report = StallReport(snapshot: hang, context: ReportFixtures.context())
        #expect(StallLedger.culprit(hang, report) == report.culpritName)
        #expect(StallLedger.culprit(hang, nil) == hang.heaviestStack?.topFunction)
        #expect(StallLedger.describe(hang, report).hasSuffix(" in \(report.culpritName ?? "?")"))
        let deadlock = ReportFixtures.deadlocked()
        #expect(StallLedger.describe(deadlock, nil).hasPrefix("\(StallReason.deadlock.hexCode) deadlock in "))
    }
}
