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
    /// Processes of the run the agent was not permitted to watch (name, pid), the command's
    /// own first when it was one of them.
    public var unwatched: [(name: String, pid: Int32)] = []
    /// Processes of the run never watched because the agent's open-file limit was reached.
    public var unwatchedForDescriptors: [(name: String, pid: Int32)] = []
    /// Go programs of the run, not watched (`StallAgentError.goProgram`).
    public var unwatchedGo: [(name: String, pid: Int32)] = []

    public var stalls: [MonitorSummary.Stall] { summaries.flatMap(\.stalls) }

    /// Processes `--kill-after` ended.
    public var terminatedStalls: Int { stalls.filter(\.terminated).count }

    /// A timed-out or killed run fails in every output, whatever the command's status.
    public var isFailure: Bool { expiredTimeout != nil || terminatedStalls > 0 }
}

extension RunOutcome {
    /// The line every wrapped run ends with (unless `--quiet`): what was watched, for how long,
    /// what it cost — so a clean run says the agent ran and saw nothing, instead of nothing.
    /// `stallagent: 0 stalls over 41.2 s of python3 and 3 children; agent 1.2 % CPU`
    public func summaryLine(command: String, wallSeconds: Double, agentCPUSeconds: Double) -> String {
        let name = command.split(separator: "/").last.map(String.init) ?? command
        let others = max(0, summaries.count - 1)
        let count = stalls.count
        var line = "stallagent: \(count) stall\(count == 1 ? "" : "s") over \(String(format: "%.1f", wallSeconds)) s of \(name.terminalSafe)"
        if others > 0 { line += " and \(others) \(others == 1 ? "child" : "children")" }
        if !unwatched.isEmpty {
            let names = Set(unwatched.map(\.name)).sorted().prefix(3).map(\.terminalSafe).joined(separator: ", ")
            line += "; \(unwatched.count) not watched (permission denied: \(names))"
        }
        if !unwatchedGo.isEmpty {
            let names = Set(unwatchedGo.map(\.name)).sorted().prefix(3).map(\.terminalSafe).joined(separator: ", ")
            line += "; \(unwatchedGo.count) not watched (Go program\(unwatchedGo.count == 1 ? "" : "s"): \(names))"
        }
        if !unwatchedForDescriptors.isEmpty {
            let names = Set(unwatchedForDescriptors.map(\.name)).sorted().prefix(3).map(\.terminalSafe).joined(separator: ", ")
            line += "; \(unwatchedForDescriptors.count) not watched (open-file limit: \(names))"
        }
        let share = wallSeconds > 0 ? 100 * agentCPUSeconds / wallSeconds : 0
        line += String(format: "; agent %.1f %% CPU", share)
        return line
    }
}
