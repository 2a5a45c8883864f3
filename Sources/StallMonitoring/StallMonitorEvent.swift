import StallReports

/// A stall as the monitor announces it to the host agent (journal, metrics), carrying the
/// line it would otherwise have printed.
public enum StallMonitorEvent {
    /// Crossed the threshold; `reportPath` is nil when annealing skipped the report.
    case detected(report: StallReport, reportPath: String?, message: String)
    /// Back to idle, the target died, or the watch stopped.
    case ended(stall: MonitorSummary.Stall, report: StallReport, message: String)
}
