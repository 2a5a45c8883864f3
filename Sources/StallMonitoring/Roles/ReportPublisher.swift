import StallDetection
import StallReports

/// Puts each revision of a stall's report on disk and keeps the stall's book (`StallLedger`)
/// in step with what is there. A report is the agent's whole output, and the disk it goes to
/// may be full or half-writable: a revision written without some formats still counts, an
/// ongoing one that fails waits for the next update, and a final one is kept and tried again
/// (`FinalReportRetry`, docs/operations.md, "A full disk"). Apart from the monitor, those
/// paths are tested with a fake writer, without a process or a full disk.
final class ReportPublisher {
    /// Where reports go: the `ReportWriter`, or a fake in tests.
    protocol Sink: AnyObject {
        func write(_ report: StallReport, folded: String?, stem: String?) throws -> ReportPaths
        /// The stall ended: the writer forgets its record of the stall's files.
        func finished(pid: Int32, id: Int)
    }

    /// Each stall's fingerprint decision, report paths, lock owner and termination.
    var ledger = StallLedger()
    /// Final revisions a full disk refused, tried again (see the type).
    private var unwrittenFinals = FinalReportRetry()
    private let sink: Sink
    private let pid: Int32
    private let writeFolded: Bool
    private let log: (String) -> Void
    private let clock: () -> Double
    /// Asks for a report to be named again once debuginfod has fetched its debug files.
    private let followUp: (_ report: StallReport, _ jsonPath: String) -> Void

    init(
        sink: Sink, pid: Int32, writeFolded: Bool, log: @escaping (String) -> Void, clock: @escaping () -> Double,
        followUp: @escaping (_ report: StallReport, _ jsonPath: String) -> Void
    ) {
        self.sink = sink
        self.pid = pid
        self.writeFolded = writeFolded
        self.log = log
        self.clock = clock
        self.followUp = followUp
    }

    var hasUnwrittenFinals: Bool { !unwrittenFinals.isEmpty }

    /// Writes `report`, the latest revision of `snapshot`'s stall, unless its fingerprint was
    /// seen too recently to earn one.
    func publish(_ report: StallReport, of snapshot: StallSnapshot) {
        guard ledger.shouldWriteReport(snapshot.id) else { return }
        let folded =
            writeFolded
            ? FoldedStackRenderer.render(snapshot, resolve: { $0.function }) : nil
        do {
            let paths = try sink.write(report, folded: folded, stem: nil)
            ledger.noteWritten(snapshot.id, paths: paths)
            if !snapshot.ongoing {
                followUp(report, paths.json)
            }
            ledger.noteFirstWritten(snapshot.id, at: clock())
        } catch ReportWriteError.formatsFailed(let paths, let failures) {
            ledger.noteWritten(snapshot.id, paths: paths)
            ledger.noteFirstWritten(snapshot.id, at: clock())
            log("stallagent: warning: stall #\(snapshot.id): report written without \(failures.joined(separator: "; "))")
        } catch {
            // A full disk must not stop the watch: warn, keep monitoring, try again next update.
            guard !snapshot.ongoing else {
                log("stallagent: warning: could not write the report for stall #\(snapshot.id): \(error)")
                return
            }
            // The last revision: no next update will come, and the file on disk says "ongoing".
            let stale = ledger.reportPaths[snapshot.id]
            log(
                "stallagent: warning: could not write the final report for stall #\(snapshot.id): \(error); "
                    + (stale.map { "\($0.text) still shows it ongoing; " } ?? "")
                    + "trying again every \(Format.seconds(FinalReportRetry.interval))")
            let entry = FinalReportRetry.Pending(
                id: snapshot.id, report: report, folded: folded, stale: stale, error: "\(error)")
            if let dropped = unwrittenFinals.add(entry, at: clock()) {
                log(FinalReportRetry.abandonedMessage(dropped))
                sink.finished(pid: pid, id: dropped.id)
            }
        }
    }

    /// An on-demand snapshot's report, outside any stall (no book, no retry): the text's path,
    /// nil when it could not be written; what failed is said.
    func writeSnapshot(_ report: StallReport) -> String? {
        do {
            return try sink.write(report, folded: nil, stem: nil).text
        } catch ReportWriteError.formatsFailed(let paths, let failures) {
            log("stallagent: warning: snapshot report written without \(failures.joined(separator: "; "))")
            return paths.text
        } catch {
            log("stallagent: warning: could not write the snapshot report: \(error)")
            return nil
        }
    }

    /// The stall ended: its book is closed. A final revision waiting for room keeps the
    /// writer's record of the stale one, which the retry replaces (and removes, if the name
    /// changed with the reason).
    func close(_ id: Int) {
        // The stall is over: nothing per stall stays behind (a watch of months sees millions).
        ledger.close(id)
        if !unwrittenFinals.holds(id) { sink.finished(pid: pid, id: id) }
    }

    /// Tries the final revisions a full disk refused, when due (`final`: now, for the last time).
    func retryFinalReports(at now: Double, final: Bool) {
        let (written, abandoned) = unwrittenFinals.retry(at: now, final: final, writer: sink)
        for (entry, paths) in written {
            log("stallagent: stall #\(entry.id): final report written now that there is room → \(paths.text)")
            sink.finished(pid: pid, id: entry.id)
        }
        for entry in abandoned {
            log(FinalReportRetry.abandonedMessage(entry))
            sink.finished(pid: pid, id: entry.id)
        }
    }
}

extension ReportWriter: ReportPublisher.Sink {}
