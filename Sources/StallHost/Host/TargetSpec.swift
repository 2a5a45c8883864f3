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
    /// This target's own settings (`AgentConfiguration.targetSettings`), as the file gave them
    /// (texts by config key, checked when the file was read): applied over the options every
    /// target gets, a repeatable one adding to them.
    public var overrides: [String: [String]] = [:]

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
        for binding in MonitorOptions.settingBindings {
            guard let key = binding.setting.configKey, let texts = overrides[key] else { continue }
            // The file's reader refused a bad text, with its line: none is left here.
            try? binding.apply(texts, to: &options)
        }
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
