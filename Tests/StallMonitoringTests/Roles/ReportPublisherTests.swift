import ReportTestSupport
import Testing

@testable import StallMonitoring
@testable import StallDetection
import StallReports

/// What reaches the disk of each revision of a stall's report, and what the agent says when
/// the disk refuses it, with a fake writer and a fake clock.
@Suite struct ReportPublisherTests {
    struct DiskFull: Error, CustomStringConvertible {
        var description: String { "No space left on device" }
    }

    final class FakeSink: ReportPublisher.Sink {
        enum Answer {
            case written
            case withoutFormats([String])
            case refused
        }
        var answer = Answer.written
        var writes: [(id: Int, ongoing: Bool, folded: Bool, stem: String?)] = []
        var finished: [Int] = []

        func write(_ report: StallReport, folded: String?, stem: String?) throws -> ReportPaths {
            var paths = ReportPaths(text: "/reports/stall-\(report.id).txt", json: "/reports/stall-\(report.id).json")
            paths.stem = "stall-\(report.id)"
            switch answer {
            case .written:
                writes.append((report.id, report.span.ongoing, folded != nil, stem))
                return paths
            case .withoutFormats(let failures):
                writes.append((report.id, report.span.ongoing, folded != nil, stem))
                throw ReportWriteError.formatsFailed(paths: paths, failures: failures)
            case .refused:
                throw DiskFull()
            }
        }
        func finished(pid: Int32, id: Int) { finished.append(id) }
    }

    final class Harness {
        let sink = FakeSink()
        var lines: [String] = []
        var now = 100.0
        var followedUp: [String] = []
        lazy var publisher = ReportPublisher(
            sink: sink, pid: 1234, writeFolded: true, log: { [unowned self] in lines.append($0) }, clock: { [unowned self] in now },
            followUp: { [unowned self] _, json in followedUp.append(json) })
    }

    static func report(_ snapshot: StallSnapshot) -> StallReport {
        StallReport(snapshot: snapshot, context: ReportFixtures.context())
    }

    /// Each revision is written (with its folded stacks); the first write's time is kept, and
    /// only the final revision is handed to the debuginfod follow-up.
    @Test func revisionsAreWrittenAndTheFirstWriteTimed() {
        let harness = Harness()
        let started = ReportFixtures.hangStarted()
        harness.publisher.publish(Self.report(started), of: started)
        harness.now = 101
        var ended = ReportFixtures.hangEnded()
        ended.id = started.id
        harness.publisher.publish(Self.report(ended), of: ended)
        #expect(harness.sink.writes.map(\.ongoing) == [true, false])
        #expect(harness.sink.writes.allSatisfy { $0.folded && $0.stem == nil })
        #expect(harness.publisher.ledger.firstWritten[started.id] == 100)
        #expect(harness.publisher.ledger.summaryPath(started.id) == "/reports/stall-\(started.id).txt")
        #expect(harness.followedUp == ["/reports/stall-\(started.id).json"])
        #expect(harness.lines.isEmpty)
        harness.publisher.close(started.id)
        #expect(harness.sink.finished == [started.id])
        #expect(harness.publisher.ledger.reportPaths.isEmpty)
    }

    /// A fingerprint seen too recently is not written at all.
    @Test func aStallSeenBeforeIsNotWritten() {
        let harness = Harness()
        let ended = ReportFixtures.hangEnded()
        harness.publisher.ledger.open(
            ended.id, decision: StallFingerprintBook.Decision(fingerprint: "f00d", occurrence: 4, shouldWriteReport: false))
        harness.publisher.publish(Self.report(ended), of: ended)
        #expect(harness.sink.writes.isEmpty)
        #expect(harness.followedUp.isEmpty)
        #expect(harness.publisher.ledger.firstWritten.isEmpty)
    }

    /// A report written without some formats counts as written, with a warning naming them.
    @Test func aReportMissingFormatsCountsAsWritten() {
        let harness = Harness()
        harness.sink.answer = .withoutFormats(["folded: disk quota exceeded"])
        let ended = ReportFixtures.hangEnded()
        harness.publisher.publish(Self.report(ended), of: ended)
        #expect(harness.publisher.ledger.reportPaths[ended.id] != nil)
        #expect(harness.publisher.ledger.firstWritten[ended.id] == 100)
        #expect(harness.lines == ["stallagent: warning: stall #\(ended.id): report written without folded: disk quota exceeded"])
    }

    /// A full disk: an ongoing revision waits for the next update; the final one, whose file
    /// on disk still says "ongoing", is kept and written once there is room, over the stale
    /// file. Until then closing the stall leaves the writer's record of it alone.
    @Test func aFinalRevisionTheDiskRefusedIsWrittenOnceThereIsRoom() {
        let harness = Harness()
        let started = ReportFixtures.hangStarted()
        harness.publisher.publish(Self.report(started), of: started)
        harness.sink.answer = .refused
        harness.publisher.publish(Self.report(started), of: started)
        #expect(harness.lines == ["stallagent: warning: could not write the report for stall #\(started.id): No space left on device"])
        #expect(!harness.publisher.hasUnwrittenFinals)

        var ended = ReportFixtures.hangEnded()
        ended.id = started.id
        harness.publisher.publish(Self.report(ended), of: ended)
        #expect(harness.publisher.hasUnwrittenFinals)
        #expect(harness.lines.last?.contains("/reports/stall-\(started.id).txt still shows it ongoing; trying again every") == true)
        harness.publisher.close(ended.id)
        #expect(harness.sink.finished.isEmpty)

        harness.sink.answer = .written
        harness.publisher.retryFinalReports(at: 100 + FinalReportRetry.interval / 2, final: false)
        #expect(harness.sink.writes.count == 1)
        harness.publisher.retryFinalReports(at: 100 + FinalReportRetry.interval, final: false)
        #expect(harness.sink.writes.last?.stem == "stall-\(started.id)")
        #expect(harness.sink.writes.last?.ongoing == false)
        #expect(harness.lines.last == "stallagent: stall #\(started.id): final report written now that there is room → /reports/stall-\(started.id).txt")
        #expect(harness.sink.finished == [started.id])
        #expect(!harness.publisher.hasUnwrittenFinals)
    }

    /// Still no room when the watch ends: given up on, said with the stale file.
    @Test func aFinalRevisionNeverWrittenIsSaidAtTheEnd() {
        let harness = Harness()
        harness.sink.answer = .refused
        let ended = ReportFixtures.hangEnded()
        harness.publisher.publish(Self.report(ended), of: ended)
        harness.publisher.retryFinalReports(at: 101, final: true)
        #expect(harness.lines.last?.hasPrefix("stallagent: warning: the final report of stall #\(ended.id) could not be written") == true)
        #expect(harness.lines.last?.contains("no report of it was written") == true)
        #expect(harness.sink.finished == [ended.id])
        #expect(!harness.publisher.hasUnwrittenFinals)
    }
}

/// An on-demand snapshot's report: written outside any stall's book, its path given even
/// when some formats failed, nil (and said) when the disk refused it, never retried.
extension ReportPublisherTests {
    @Test func aSnapshotReportIsWrittenOnceOutsideTheBook() {
        let harness = Harness()
        let snapshot = ReportFixtures.hangStarted()
        let report = Self.report(snapshot)
        #expect(harness.publisher.writeSnapshot(report) == "/reports/stall-\(report.id).txt")
        #expect(harness.sink.writes.map(\.folded) == [false], "no folded stacks")
        #expect(harness.lines.isEmpty)
        harness.sink.answer = .withoutFormats(["json: disk full"])
        #expect(harness.publisher.writeSnapshot(report) == "/reports/stall-\(report.id).txt")
        #expect(harness.lines == ["stallagent: warning: snapshot report written without json: disk full"])
        harness.sink.answer = .refused
        #expect(harness.publisher.writeSnapshot(report) == nil)
        #expect(harness.lines.last == "stallagent: warning: could not write the snapshot report: No space left on device")
        #expect(harness.publisher.ledger.reportPaths.isEmpty)
        #expect(!harness.publisher.hasUnwrittenFinals)
        #expect(harness.sink.finished.isEmpty)
    }
}
