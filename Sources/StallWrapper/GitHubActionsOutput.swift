import Foundation
import StallMonitoring
import StallDetection

/// GitHub Actions output when `GITHUB_ACTIONS=true`: an `::error` annotation per stall (the
/// UI shows at most 10 per step) and a table appended to `$GITHUB_STEP_SUMMARY`.
public enum GitHubActionsOutput {
    public static var isActive: Bool { ProcessInfo.processInfo.environment["GITHUB_ACTIONS"] == "true" }

    /// Workflow-command escaping: data escapes %, CR and LF; property values also : and ,.
    static func escapeData(_ text: String) -> String {
        text.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "\r", with: "%0D")
            .replacingOccurrences(of: "\n", with: "%0A")
    }

    static func escapeProperty(_ text: String) -> String {
        escapeData(text).replacingOccurrences(of: ":", with: "%3A").replacingOccurrences(of: ",", with: "%2C")
    }

    public static func annotations(outcome: RunOutcome, limit: Int = 10) -> [String] {
        var lines: [String] = []
        for summary in outcome.summaries {
            for stall in summary.stalls {
                let title = "\(stall.reason.hexCode) \(stall.reason.name) in \(summary.name.terminalSafe)[\(summary.pid)]"
                var message = "main thread stalled \(String(format: "%.2f", stall.duration)) s in \(stall.topFunction.terminalSafe)"
                if stall.terminated { message += " (terminated by --kill-after)" }
                if let path = stall.reportPath { message += "\nreport: \(path)" }
                lines.append("::error title=\(escapeProperty(title))::\(escapeData(message))")
            }
        }
        if let timeout = outcome.expiredTimeout {
            let title = "stallagent: --timeout \(String(format: "%.2f", timeout)) s expired"
            for snapshot in outcome.snapshots {
                var message =
                    "main thread of \(snapshot.name.terminalSafe)[\(snapshot.pid)] \(snapshot.activity.terminalSafe) in \(snapshot.topFunction.terminalSafe)"
                if let path = snapshot.reportPath { message += "\nreport: \(path)" }
                lines.append("::error title=\(escapeProperty(title))::\(escapeData(message))")
            }
            if outcome.snapshots.isEmpty {
                lines.append("::error title=\(escapeProperty(title))::no watched process could be captured")
            }
        }
        if lines.count > limit {
            let more = lines.count - limit
            lines = Array(lines.prefix(limit))
            lines.append("::warning title=stallagent::\(more) more; see the step summary and the reports")
        }
        return lines
    }

    /// Markdown for the step summary: a headline that is red (❌) for a timed-out or killed
    /// run, then a table of stalls and timeout snapshots. Table cells escape `|` and newlines.
    public static func stepSummary(outcome: RunOutcome, reportDirectory: String) -> String {
        func cell(_ text: String) -> String {
            text.terminalSafe.replacingOccurrences(of: "|", with: "\\|")
        }
        let stalls = outcome.stalls
        var headline: [String] = []
        if let timeout = outcome.expiredTimeout {
            headline.append("timed out after \(Format.seconds(timeout)), command terminated")
        }
        if outcome.terminatedStalls > 0 {
            headline.append("\(outcome.terminatedStalls) stalled process\(outcome.terminatedStalls == 1 ? "" : "es") killed by --kill-after")
        }
        if !stalls.isEmpty {
            headline.append("\(stalls.count) main-thread stall\(stalls.count == 1 ? "" : "s")")
        }
        var out = "### "
        if outcome.isFailure {
            out += "❌ stallagent: " + headline.joined(separator: "; ")
        } else {
            out += "stallagent: " + (headline.isEmpty ? "no main-thread stalls" : headline.joined(separator: "; "))
        }
        out += "\n\nExit status: \(outcome.status)\n\n"
        guard !stalls.isEmpty || !outcome.snapshots.isEmpty else { return out }
        out += "| process | code | reason | duration | in | report |\n|---|---|---|---|---|---|\n"
        for summary in outcome.summaries {
            for stall in summary.stalls {
                out +=
                    "| \(cell("\(summary.name)[\(summary.pid)]")) | `\(stall.reason.hexCode)` | \(stall.reason.name)\(stall.terminated ? " (terminated)" : "") | \(String(format: "%.2f s", stall.duration)) | `\(cell(stall.topFunction))` | \(cell(stall.reportPath ?? "(repeat, not rewritten)")) |\n"
            }
        }
        for snapshot in outcome.snapshots {
            out +=
                "| \(cell("\(snapshot.name)[\(snapshot.pid)]")) | `\(StallReason.snapshot.hexCode)` | timeout: \(cell(snapshot.activity)) | — | `\(cell(snapshot.topFunction))` | \(cell(snapshot.reportPath ?? "(not written)")) |\n"
        }
        out += "\nReports: `\(cell(reportDirectory))`\n"
        return out
    }

    /// Annotations go to stdout, which the command shares unpiped: its last line may lack a
    /// newline, and `::error` must start a line for GitHub to read it.
    public static func emit(outcome: RunOutcome, reportDirectory: String, write: (String) -> Void) {
        let lines = annotations(outcome: outcome)
        if !lines.isEmpty {
            write((OutputLineStart.isAtLineStart(fd: 1) ? "" : "\n") + lines.map { $0 + "\n" }.joined())
        }
        if let path = ProcessInfo.processInfo.environment["GITHUB_STEP_SUMMARY"], !path.isEmpty,
            let handle = FileHandle(forWritingAtPath: path)
        {
            handle.seekToEndOfFile()
            handle.write(Data(stepSummary(outcome: outcome, reportDirectory: reportDirectory).utf8))
            handle.closeFile()
        }
    }
}
