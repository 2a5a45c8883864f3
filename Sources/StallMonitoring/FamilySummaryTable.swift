/// The exit summary of a target watched as a whole (a family, a unit): one table with a row
/// per process and its kind, instead of a block per process that repeats the report
/// directory and the agent's own figures (issue 24).
public enum FamilySummaryTable {
    public static func render(label: String, summaries: [MonitorSummary], stoppedBySignal: Int32?) -> String {
        guard let first = summaries.first else { return "stallagent: \(label.terminalSafe): no process watched" }
        let total = summaries.reduce(0) { $0 + max($1.stallCount, $1.stalls.count) }
        let longest = summaries.map(\.watchedSeconds).max() ?? 0
        let ending = stoppedBySignal != nil ? " until interrupted" : ""
        var lines = [
            "stallagent: watched \(label.terminalSafe), \(summaries.count) process\(summaries.count == 1 ? "" : "es"), for \(Format.seconds(longest))\(ending): "
                + (total == 0 ? "no stalls" : "\(total) stall\(total == 1 ? "" : "s")")
        ]
        var rows = [["pid", "process", "kind", "watched", "turns/s", "busy", "stalls", "worst"]]
        for summary in summaries.sorted(by: { $0.pid < $1.pid }) {
            let stalls = max(summary.stallCount, summary.stalls.count)
            let health = summary.loopHealth
            var watched = Format.seconds(summary.watchedSeconds)
            if summary.targetExited { watched += " (exited)" }
            rows.append([
                String(summary.pid), summary.name.terminalSafe, summary.kind.rawValue, watched,
                health.map { String(format: "%.1f", $0.turnsPerSecond) } ?? "-",
                health.map { String(format: "%.1f %%", $0.busyPercent) } ?? (summary.busySeconds == 0 ? "idle" : "-"),
                String(stalls), summary.worstLine ?? "",
            ])
        }
        let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            let cells = row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }
            lines.append("  " + cells.joined(separator: "  ").trimmingTrailingSpaces())
        }
        lines.append("  reports: \(first.reportDirectory)")
        // The agent's figures are the agent's, not a process's: the latest summary has them.
        let last = summaries.max(by: { $0.agentElapsedSeconds < $1.agentElapsedSeconds }) ?? first
        lines.append(
            last.agentLine(
                samples: summaries.reduce(0) { $0 + $1.samples },
                capturesWithStop: summaries.reduce(0) { $0 + $1.capturesWithStop }, watchedSeconds: longest))
        return lines.joined(separator: "\n")
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}
