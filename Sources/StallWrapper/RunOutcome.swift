import StallMonitoring

/// How a wrapped run ended: what the wrapper exits with, and what its CI outputs (JUnit,
/// GitHub annotations, step summary, the stderr table) must show.
public struct RunOutcome: Sendable {
    /// The wrapper's exit status (see `RunExitCode`).
    public var status: Int32
    /// The command's own status: its exit code, or 128 + the signal that killed it; nil if
    /// the agent lost track of it.
    public var commandStatus: Int32?
    /// The signal that killed the command, if one did.
    public var commandSignal: Int32?
    /// Set when the agent should die of this signal rather than exit: it received the signal
    /// (INT, TERM, HUP) and the command died of it.
    public var dieOfSignal: Int32?
    /// The `--timeout` that expired, if it did.
    public var expiredTimeout: Double?
    /// Snapshots taken when `--timeout` expired, one per watched process.
    public var snapshots: [TimeoutSnapshot] = []
    public var summaries: [MonitorSummary] = []

    public var stalls: [MonitorSummary.Stall] { summaries.flatMap(\.stalls) }

    /// Processes `--kill-after` ended.
    public var terminatedStalls: Int { stalls.filter(\.terminated).count }

    /// A timed-out or killed run fails in every output, whatever the command's status.
    public var isFailure: Bool { expiredTimeout != nil || terminatedStalls > 0 }
}
