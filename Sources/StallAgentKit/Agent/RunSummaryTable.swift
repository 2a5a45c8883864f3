/// The table printed on stderr when a wrapped command ends with stalls to report.
public enum RunSummaryTable {
    public static func render(summaries: [MonitorSummary], snapshots: [String], reportDirectory: String) -> String {
        var lines = ["stallagent: stalls in this run:"]
        lines.append("  process                    #  code        reason    duration  in")
        for summary in summaries {
            for stall in summary.stalls {
                let process = "\(summary.name)[\(summary.pid)]".padding(toLength: 26, withPad: " ", startingAt: 0)
                lines.append("  \(process) \(String(stall.id).padding(toLength: 2, withPad: " ", startingAt: 0)) \(stall.reason.hexCode)  \(stall.reason.name.padding(toLength: 9, withPad: " ", startingAt: 0)) \(Format.seconds(stall.duration).padding(toLength: 9, withPad: " ", startingAt: 0)) \(stall.topFunction)\(stall.terminated ? " (terminated)" : "")")
            }
        }
        if !snapshots.isEmpty { lines.append("  \(snapshots.count) snapshot report(s) from --timeout") }
        lines.append("  reports: \(reportDirectory)")
        return lines.joined(separator: "\n")
    }
}
