import StallDetection

/// One line per report for stderr and the journal, e.g.
/// `stall #3 0xdead10cc lock 1.21 s in lock_contention (stall-fixtures[1234], loop) → /path/report.txt`.
public enum StallSummaryLine {
    public static func render(_ r: StallReport, reportPath: String?) -> String {
        var reason = "\(r.reason.hexCode) \(r.reason.name)"
        if r.cause != r.reason && r.cause != .snapshot { reason += " (\(r.cause.name))" }
        var text = "\(r.kind) #\(r.id) \(reason) \(ReportNumber.duration(r.span.durationSeconds))" + (r.span.ongoing ? "+" : "")
        // A guessed name says so here too: this line is often all a reader sees.
        if let name = r.culpritName { text += " in " + name }
        var notes = ["\(r.process.name)[\(r.process.pid)]", r.phase]
        if r.span.ongoing { notes.append("ongoing") }
        if let termination = r.termination {
            notes.append(ReportTermination.isRefusal(termination) ? "kill refused" : "terminated")
        }
        switch r.span.ending.flatMap(StallEnding.init(rawValue:)) {
        case .targetDied?: notes.append("died")
        case .targetExited?: notes.append("then exited")
        case .targetEnded?: notes.append("then ended")
        case .monitoringStopped?: notes.append("monitoring stopped")
        case .returnedToIdle?, nil: break
        }
        if r.recurrence.occurrence > 1 { notes.append("seen \(r.recurrence.occurrence)×") }
        text += " (\(notes.joined(separator: ", ")))"
        if let reportPath { text += " → \(reportPath)" }
        return TerminalSanitizer.line(text)
    }
}
