import StallDetection
import StallReports

/// Says each stall: whether its report is written (the fingerprint book's annealing across
/// stalls, and the minimum report interval), and the line when it is detected and when it
/// ends, as structured events when the host agent takes them, else to the log unless quiet.
final class StallAnnouncer {
    /// Per-fingerprint occurrence counts; the host agent persists them across restarts.
    /// The host agent shares one book among the processes of a unit (workers stall alike).
    var fingerprints: StallFingerprintBook
    /// When set, stall lines go here (as structured events) instead of to `log`: the host
    /// agent sends them to the journal and counts them in the metrics.
    var events: ((StallMonitorEvent) -> Void)?
    private let quiet: Bool
    private let minimumReportInterval: Double
    private let log: (String) -> Void
    /// Unix time, for the book's rate limit (it must survive agent restarts).
    private let wallClock: () -> Double

    init(
        fingerprints: StallFingerprintBook, quiet: Bool, minimumReportInterval: Double, log: @escaping (String) -> Void,
        wallClock: @escaping () -> Double
    ) {
        self.fingerprints = fingerprints
        self.quiet = quiet
        self.minimumReportInterval = minimumReportInterval
        self.log = log
        self.wallClock = wallClock
    }

    /// A stall began: the book counts its fingerprint and says whether it gets a report.
    func decide(_ snapshot: StallSnapshot) -> StallFingerprintBook.Decision {
        fingerprints.record(snapshot.fingerprint, wallTime: wallClock(), minimumInterval: minimumReportInterval)
    }

    /// The stall of process `name` [`pid`] crossed its threshold; `thread` says which thread
    /// stalls, `reportPath` where its report went (given only when it gets one).
    func detected(
        _ snapshot: StallSnapshot, _ report: StallReport, decision: StallFingerprintBook.Decision, reportPath: () -> String?,
        name: String, pid: Int32, thread: String
    ) {
        if let events {
            events(
                .detected(
                    report: report, reportPath: decision.shouldWriteReport ? reportPath() : nil,
                    message:
                        "stall #\(snapshot.id) in \(name)[\(pid)] detected: \(thread) \(StallLedger.describe(snapshot, report)) for \(Format.seconds(snapshot.duration)) so far"
                        + (decision.shouldWriteReport ? "" : " (seen before: \(decision.occurrence)×)")))
        } else if !quiet {
            log(
                "stallagent: stall #\(snapshot.id) in \(name.terminalSafe)[\(pid)] detected: \(thread.terminalSafe) \(StallLedger.describe(snapshot, report)) for \(Format.seconds(snapshot.duration)) so far"
                    + (decision.shouldWriteReport ? "" : " (seen before: \(decision.occurrence)×)"))
        }
    }

    /// A stall ended: its summary line goes to the log, before the summary records it, when no
    /// events are taken.
    func logEnded(_ report: StallReport, reportPath: String?) {
        if events == nil, !quiet { log(StallSummaryLine.render(report, reportPath: reportPath)) }
    }

    /// A stall ended and the summary recorded it: the host agent hears of it.
    func sendEnded(_ stall: MonitorSummary.Stall, _ report: StallReport, reportPath: String?) {
        events?(.ended(stall: stall, report: report, message: StallSummaryLine.render(report, reportPath: reportPath)))
    }
}
