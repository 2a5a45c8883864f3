import Foundation
import StallDetection

/// The report's one-sentence "Description:" line: what the main thread did, for how long
/// against which threshold, and how it ended — the line a reader looks at first.
enum StallReportDescription {
    static func sentence(for report: StallReport) -> String {
        let doing = activity(report)
        if report.kind == "snapshot" {
            guard report.span.durationSeconds > 0 || report.stateBreakdown.busySeconds > 0 else {
                return "on-demand snapshot; main thread not in a busy episode"
            }
            return "on-demand snapshot; main thread \(doing) for \(ReportNumber.duration(report.span.durationSeconds))"
                + (report.span.ongoing ? ", ongoing" : "")
        }
        let limit = report.phase == StallPhase.launch.rawValue ? "launch threshold" : "threshold"
        let during = report.phase == StallPhase.launch.rawValue ? " during launch" : ""
        return "\(subject(report)) \(doing)\(during) for \(ReportNumber.duration(report.span.durationSeconds)) "
            + (report.span.thresholdSeconds.isFinite ? "(\(limit) \(ReportNumber.duration(report.span.thresholdSeconds))), " : "(no \(limit)), ")
            + outcome(report)
    }

    /// The main thread, or the thread it waited for when that thread was watched in its stead
    /// (a Rust test's own thread under libtest; `WorkerThreadFollower` in the monitor).
    private static func subject(_ report: StallReport) -> String {
        guard report.thread.tid != report.process.pid else { return "main thread" }
        return "thread \(report.thread.name) [\(report.thread.tid)], which the main thread waited for,"
    }

    /// Phrased from the cause, not the printed reason, so a stall that ended in the target's
    /// death still says what the thread was doing.
    private static func activity(_ report: StallReport) -> String {
        let cause = report.cause
        if report.deadlock || cause == .deadlock {
            return "deadlocked" + (report.lockOwner.map { " with \(thread($0))" + chain($0) } ?? "")
        }
        switch cause.code {
        case StallReason.hang.code:
            return "busy on CPU"
        case StallReason.lock.code:
            return "waiting on a lock" + (report.lockOwner.map { " held by \(thread($0))" } ?? "")
        case StallReason.io.code:
            return "blocked in disk or file I/O" + inFunction(report)
        case StallReason.blocked.code:
            return "blocked in a synchronous call" + inFunction(report)
        case StallReason.starved.code:
            let wait = ReportNumber.percent(report.stateBreakdown.runQueueWait.fraction)
            return "runnable but starved of CPU (run-queue wait \(wait))"
        case StallReason.snapshot.code, StallReason.died.code:
            return "busy"
        default:
            return "stalled (\(cause.name))"
        }
    }

    private static func outcome(_ report: StallReport) -> String {
        if let termination = report.termination { return termination }
        if report.span.ongoing { return "ongoing" }
        switch report.span.ending.flatMap(StallEnding.init(rawValue:)) {
        case .targetDied?: return "then the process died"
        case .targetExited?: return "then the process exited"
        case .targetEnded?: return "then the process ended (not the agent's child: whether by exit or signal is unknown)"
        case .monitoringStopped?: return "still busy when monitoring stopped"
        case .returnedToIdle?, nil: return "not terminated"
        }
    }

    private static func thread(_ owner: ReportLockOwner) -> String {
        "thread \(owner.tid)" + (owner.name.map { " \"\($0)\"" } ?? "")
    }

    private static func chain(_ owner: ReportLockOwner) -> String {
        owner.waitChain.count > 1 ? " (wait-for cycle \(owner.waitChain.map(String.init).joined(separator: " → ")))" : ""
    }

    private static func inFunction(_ report: StallReport) -> String {
        report.stallFrame?.function.map { " in \($0)" } ?? ""
    }
}
