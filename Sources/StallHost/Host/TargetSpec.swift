import Foundation
import StallMonitoring

/// One thing the host agent watches: a fixed pid, the pid in a pidfile, or a systemd unit,
/// with per-target overrides of the detection settings.
public struct TargetSpec: Sendable, Equatable {
    public enum Selector: Sendable, Equatable {
        case pid(Int32)
        case pidfile(String)
        case unit(String)
    }

    /// Which processes of a target have their main thread watched.
    public enum Processes: String, Sendable, Equatable {
        /// The one process the selector names (a unit's main process).
        case main
        /// Every process of the unit's cgroup, or the pid and all its descendants: the workers
        /// of a forking server are where requests run and stall.
        case all
    }

    public var selector: Selector
    /// nil: the selector's default, every process of a unit and the one process otherwise.
    public var processes: Processes?
    /// The label in metrics, the journal and state file names (default: unit name, pidfile
    /// path or pid).
    public var name: String?
    public var threshold: Double?
    public var launchThreshold: Double?
    public var killAfter: Double?
    public var extraIdleSyscalls: Set<Int> = []
    public var idleFramePatterns: [String] = []
    public var busyFramePatterns: [String] = []
    public var appFramePatterns: [String] = []

    public init(selector: Selector, name: String? = nil) {
        self.selector = selector
        self.name = name
    }

    public var label: String {
        if let name { return name }
        switch selector {
        case .pid(let pid): return "pid-\(pid)"
        case .pidfile(let path): return path
        case .unit(let unit): return unit
        }
    }

    public var watchesAllProcesses: Bool {
        if let processes { return processes == .all }
        if case .unit = selector { return true }
        return false
    }

    /// A pid target ends with its process; pidfile and unit targets outlive restarts.
    public var followsRestarts: Bool {
        if case .pid = selector { return false }
        return true
    }

    public var unitName: String? {
        if case .unit(let unit) = selector { return unit }
        return nil
    }

    /// The base options with this target's overrides applied.
    public func monitorOptions(base: MonitorOptions) -> MonitorOptions {
        var options = base
        if let threshold { options.threshold = threshold }
        if let launchThreshold { options.launchThreshold = launchThreshold }
        if let killAfter { options.killAfter = killAfter }
        options.extraIdleSyscalls.formUnion(extraIdleSyscalls)
        options.idleFramePatterns += idleFramePatterns
        options.busyFramePatterns += busyFramePatterns
        options.appFramePatterns += appFramePatterns
        return options
    }

    /// systemd unit names: letters, digits and `:-_.\@`, at most 255 bytes.
    public static func isValidUnitName(_ name: String) -> Bool {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_.\\@")
        return !name.isEmpty && name.utf8.count <= 255 && name.allSatisfy { allowed.contains($0) }
            && !name.hasPrefix(".") && !name.hasPrefix("-")
    }

    /// "nginx" means "nginx.service", as systemctl reads it.
    public static func normalizedUnitName(_ name: String) -> String {
        let suffixes = [".service", ".socket", ".target", ".scope", ".slice", ".timer", ".mount", ".path"]
        return suffixes.contains(where: { name.hasSuffix($0) }) ? name : name + ".service"
    }
}
