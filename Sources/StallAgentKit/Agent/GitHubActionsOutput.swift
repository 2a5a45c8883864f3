import Foundation

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

    public static func annotations(summaries: [MonitorSummary], limit: Int = 10) -> [String] {
        var lines: [String] = []
        let stalls = summaries.flatMap { summary in summary.stalls.map { (summary, $0) } }
        for (summary, stall) in stalls.prefix(limit) {
            let title = "\(stall.reason.hexCode) \(stall.reason.name) in \(summary.name)[\(summary.pid)]"
            var message = "main thread stalled \(String(format: "%.2f", stall.duration)) s in \(stall.topFunction)"
            if stall.terminated { message += " (terminated)" }
            if let path = stall.reportPath { message += "\nreport: \(path)" }
            lines.append("::error title=\(escapeProperty(title))::\(escapeData(message))")
        }
        if stalls.count > limit {
            lines.append("::warning title=stallagent::\(stalls.count - limit) more stalls; see the step summary and the reports")
        }
        return lines
    }

    /// Markdown table for the step summary. Table cells escape `|` and newlines.
    public static func stepSummary(summaries: [MonitorSummary], reportDirectory: String) -> String {
        func cell(_ text: String) -> String {
            text.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
        }
        let stalls = summaries.flatMap { summary in summary.stalls.map { (summary, $0) } }
        var out = "### stallagent: \(stalls.isEmpty ? "no main-thread stalls" : "\(stalls.count) main-thread stall\(stalls.count == 1 ? "" : "s")")\n\n"
        guard !stalls.isEmpty else { return out }
        out += "| process | code | reason | duration | in | report |\n|---|---|---|---|---|---|\n"
        for (summary, stall) in stalls {
            out += "| \(cell("\(summary.name)[\(summary.pid)]")) | `\(stall.reason.hexCode)` | \(stall.reason.name)\(stall.terminated ? " (terminated)" : "") | \(String(format: "%.2f s", stall.duration)) | `\(cell(stall.topFunction))` | \(cell(stall.reportPath ?? "(repeat, not rewritten)")) |\n"
        }
        out += "\nReports: `\(cell(reportDirectory))`\n"
        return out
    }

    public static func emit(summaries: [MonitorSummary], reportDirectory: String, write: (String) -> Void) {
        for line in annotations(summaries: summaries) { write(line + "\n") }
        if let path = ProcessInfo.processInfo.environment["GITHUB_STEP_SUMMARY"], !path.isEmpty,
           let handle = FileHandle(forWritingAtPath: path)
        {
            handle.seekToEndOfFile()
            handle.write(Data(stepSummary(summaries: summaries, reportDirectory: reportDirectory).utf8))
            handle.closeFile()
        }
    }
}
