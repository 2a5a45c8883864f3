import StallMonitoring

/// The table printed on stderr when a wrapped command ends with stalls, or timed out.
public enum RunSummaryTable {
    public static func render(outcome: RunOutcome, reportDirectory: String) -> String {
        var lines: [String] = []
        if !outcome.stalls.isEmpty {
            lines.append("stallagent: stalls in this run:")
            lines.append("  process                    #  code        reason    duration  in")
        }
        for summary in outcome.summaries {
            for stall in summary.stalls {
                let process = "\(summary.name.terminalSafe)[\(summary.pid)]".padding(toLength: 26, withPad: " ", startingAt: 0)
                lines.append(
                    "  \(process) \(String(stall.id).padding(toLength: 2, withPad: " ", startingAt: 0)) \(stall.reason.hexCode)  \(stall.reason.name.padding(toLength: 9, withPad: " ", startingAt: 0)) \(Format.seconds(stall.duration).padding(toLength: 9, withPad: " ", startingAt: 0)) \(stall.topFunction)\(stall.terminated ? " (terminated)" : "")"
                )
            }
        }
        if let timeout = outcome.expiredTimeout {
            lines.append("stallagent: --timeout \(Format.seconds(timeout)) expired; where each watched process was:")
            for snapshot in outcome.snapshots {
                lines.append(
                    "  \(snapshot.name.terminalSafe)[\(snapshot.pid)]: \(snapshot.activity) in \(snapshot.topFunction.terminalSafe)  \(snapshot.reportPath ?? "(report not written)")"
                )
            }
        }
        lines.append("  reports: \(reportDirectory)")
        return lines.joined(separator: "\n")
    }
}
