import StallProc

/// Under systemd, the agent's privileges are the unit's `AmbientCapabilities=` and
/// `CapabilityBoundingSet=`: a refused attach while one of the capabilities the agent needs is
/// missing is a unit setting to fix, and the advice for a terminal (setcap, ptrace_scope)
/// does not apply. Restarting cannot help either, so the agent exits with the setting to change.
public enum ServiceCapabilities {
    /// What watching another user's process needs: ptrace rights, and CAP_DAC_READ_SEARCH for
    /// its mode-0400 `/proc/PID/task/TID/syscall`.
    static let needed: [(bit: Int, name: String)] = [(19, "CAP_SYS_PTRACE"), (2, "CAP_DAC_READ_SEARCH")]

    /// systemd sets INVOCATION_ID for every service process it starts.
    public static func isSystemdService(_ environment: [String: String]) -> Bool {
        environment["INVOCATION_ID"].map { !$0.isEmpty } ?? false
    }

    /// `CapEff:` from /proc/PID/status text.
    static func effectiveSet(status: String) -> UInt64? {
        for line in status.split(separator: "\n") where line.hasPrefix("CapEff:") {
            return UInt64(line.dropFirst("CapEff:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        }
        return nil
    }

    static func missing(from effective: UInt64) -> [String] {
        needed.filter { effective & (1 << UInt64($0.bit)) == 0 }.map(\.name)
    }

    /// The agent's own unit, from `/proc/self/cgroup` (`0::/system.slice/stallagent@x.service`
    /// or, on v1, the `name=systemd` line).
    static func ownUnit(cgroup: String) -> String? {
        for line in cgroup.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, parts[1].isEmpty || parts[1] == "name=systemd" else { continue }
            if let unit = parts[2].split(separator: "/").last(where: { $0.hasSuffix(".service") }) { return String(unit) }
        }
        return nil
    }

    /// The error to exit with instead of `error`, when `error` is a refused attach of a service
    /// that lacks a needed capability; nil when it is anything else.
    public static func serviceError(for error: Error, environment: [String: String]) -> StallAgentError? {
        guard case StallAgentError.permissionDenied(let pid, _) = error, isSystemdService(environment),
            let status = try? ProcFS.readText("/proc/self/status"), let effective = effectiveSet(status: status)
        else { return nil }
        let lacking = missing(from: effective)
        guard !lacking.isEmpty else { return nil }
        let unit = (try? ProcFS.readText("/proc/self/cgroup")).flatMap(ownUnit)
        return .missingCapability(pid: pid, unit: unit, capabilities: lacking)
    }
}
