import Foundation

import StallProc
import StallMonitoring
#if canImport(Glibc)
import Glibc
#endif

/// Finds the process a target currently names: the pid itself, the pid in a pidfile, or a
/// systemd unit's main process — from the unit's cgroup, and from `systemctl show` only where
/// no cgroup hierarchy can be read. Called while a target is not watched, never from the probe
/// loop. Never throws: "not running" is a state the host agent waits out, with the reason to
/// log once.
public final class TargetResolver {
    public enum Resolution: Equatable, Sendable {
        case running(Int32)
        case notRunning(String)
    }

    /// The systemctl to ask (`STALLAGENT_SYSTEMCTL` overrides it, for hosts where it lives
    /// elsewhere).
    public let systemctl: String
    public let cgroups: UnitCgroups
    private let unitPath: [String]
    private let environment: [String: String]

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
        systemctl = environment["STALLAGENT_SYSTEMCTL"] ?? "systemctl"
        cgroups = UnitCgroups(environment: environment)
        unitPath = Self.unitSearchPath(environment["SYSTEMD_UNIT_PATH"])
    }

    public func resolve(_ spec: TargetSpec) -> Resolution {
        switch spec.selector {
        case .pid(let pid):
            return TargetResolver.isLiveProcess(pid) ? .running(pid) : .notRunning("process \(pid) is not running")
        case .pidfile(let path):
            return TargetResolver.resolvePidfile(path)
        case .unit(let unit):
            return resolveUnit(unit)
        }
    }

    static func resolvePidfile(_ path: String) -> Resolution {
        switch PidfileTrust.read(path) {
        case .trusted(let pid): return .running(pid)
        case .refused(let why): return .notRunning(why)
        }
    }

    func resolveUnit(_ unit: String) -> Resolution {
        switch locateUnit(unit) {
        case .noHierarchy:
            return resolveWithSystemctl(unit)
        case .absent(let why):
            return .notRunning(why)
        case .cgroup(let cgroup):
            guard let pid = UnitCgroups.mainProcess(of: UnitCgroups.members(of: cgroup)) else {
                return .notRunning(Self.noProcesses(unit))
            }
            return .running(pid)
        }
    }

    public enum UnitLocation: Equatable, Sendable {
        case cgroup(String)
        /// Not running or not defined, and why.
        case absent(String)
        /// No cgroup hierarchy is readable: only `systemctl show` can say.
        case noHierarchy
    }

    /// The unit's cgroup directory, or why it has none.
    public func locateUnit(_ unit: String) -> UnitLocation {
        guard !cgroups.hierarchies.isEmpty else { return .noHierarchy }
        guard let cgroup = cgroups.locate(unit) else {
            if !unitFileExists(unit) { return .absent("unit \(unit) not found (no unit file, no cgroup)") }
            return .absent("unit \(unit) is not running (it has no cgroup)")
        }
        return .cgroup(cgroup)
    }

    static func noProcesses(_ unit: String) -> String {
        "unit \(unit) has no processes (inactive, or a oneshot that has finished)"
    }

    // MARK: Unit files

    /// systemd's system unit search path (systemd.unit(5)); `SYSTEMD_UNIT_PATH` replaces it, or
    /// with a trailing ':' comes before it, as systemd reads it.
    static func unitSearchPath(_ override: String?) -> [String] {
        let defaults = [
            "/etc/systemd/system.control", "/run/systemd/system.control", "/run/systemd/transient",
            "/run/systemd/generator.early", "/etc/systemd/system", "/etc/systemd/system.attached",
            "/run/systemd/system", "/run/systemd/system.attached", "/run/systemd/generator",
            "/usr/local/lib/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system",
            "/run/systemd/generator.late",
        ]
        guard let override, !override.isEmpty else { return defaults }
        let given = override.split(separator: ":").map(String.init)
        return override.hasSuffix(":") ? given + defaults : given
    }

    /// An instance `name@x.service` is defined by its own file or by the template `name@.service`.
    func unitFileExists(_ unit: String) -> Bool {
        var names = [unit]
        if let at = unit.firstIndex(of: "@"), let dot = unit.lastIndex(of: "."), at < dot {
            names.append(String(unit[...at]) + String(unit[dot...]))
        }
        return unitPath.contains { directory in names.contains { FileManager.default.fileExists(atPath: directory + "/" + $0) } }
    }

    // MARK: systemctl

    /// Only where no cgroup hierarchy is readable. Its environment loses the notify socket and
    /// the watchdog and socket-activation variables: systemctl is a child of a Type=notify
    /// service, and one that fails would otherwise report its errno to systemd as the agent's.
    func resolveWithSystemctl(_ unit: String) -> Resolution {
        let result: (status: Int32, stdout: String, stderr: String)
        do {
            result = try ChildProcess.run(
                "/usr/bin/env", [systemctl, "show", "--property=MainPID,ActiveState,LoadState", "--", unit],
                environment: ServiceNotifier.childEnvironment(environment))
        } catch {
            return .notRunning("cannot run \(systemctl): \(error)")
        }
        guard result.status == 0 else {
            let first = result.stderr.split(separator: "\n").first.map(String.init) ?? "exit status \(result.status)"
            return .notRunning("no cgroup hierarchy to read, and \(systemctl) show \(unit) failed: \(first)")
        }
        return TargetResolver.parseUnitProperties(result.stdout, unit: unit)
    }

    /// Reads `systemctl show` output (KEY=VALUE lines).
    static func parseUnitProperties(_ text: String, unit: String) -> Resolution {
        var properties: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            properties[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        if properties["LoadState"] == "not-found" { return .notRunning("unit \(unit) not found") }
        guard let pid = properties["MainPID"].flatMap({ Int32($0) }), pid > 0 else {
            return .notRunning("unit \(unit) is \(properties["ActiveState"] ?? "not running") (no main process)")
        }
        guard isLiveProcess(pid) else { return .notRunning("unit \(unit)'s main process \(pid) is gone") }
        return .running(pid)
    }

    /// Exists and is not a zombie.
    static func isLiveProcess(_ pid: Int32) -> Bool {
        guard pid > 0, let text = try? ProcFS.readText("/proc/\(pid)/stat", pid: pid),
            let stat = ProcThreadStat.parse(text)
        else { return false }
        return stat.state != "Z" && stat.state != "X"
    }
}
