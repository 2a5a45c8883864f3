import Foundation
import Yams
import StallProc
import StallReports
import StallMonitoring

/// The host agent's settings: what `/etc/stallagent/stallagent.yaml` holds, or what the
/// command line gives for one target. YAML because Yams (libyaml) reports the line and column
/// of every node, so an unknown key or a bad value is named by its line.
///
/// ```yaml
/// report-dir: /var/lib/stallagent/reports
/// threshold: 1s
/// retention: { max-reports: 500, max-bytes: 200MB, max-age: 30d }
/// targets:
///   - unit: nginx.service
///   - pidfile: /run/myapp.pid
///     name: myapp
///     threshold: 250ms
/// ```
public struct AgentConfiguration: Sendable {
    public var monitor = MonitorOptions()
    public var targets: [TargetSpec] = []
    /// Fingerprint state lives here (default: `$STATE_DIRECTORY`, else none: not persisted).
    public var stateDirectory: String?
    public var metricsFile: String?
    public var metricsListen: String?
    public var metricsInterval = Settings.metricsInterval.defaultValue!.seconds
    public var metricsFingerprints = Settings.metricsFingerprints.defaultValue!
    public var retention = ReportRetention()
    /// How often a target that is not running is looked for again.
    public var retryInterval = Settings.retryInterval.defaultValue!.seconds

    public init() {}

    static let topLevelKeys = Set(
        settingBindings.filter { $0.configSection == nil }.compactMap(\.setting.configKey) + ["retention", "targets"])
    static let targetKeys = Set(targetSettings.compactMap(\.configKey) + ["pid", "pidfile", "unit", "name", "processes"])
    static let retentionKeys = Set(settingBindings.filter { $0.configSection == "retention" }.compactMap(\.setting.configKey))

    /// A configuration names a few hundred targets at most; a 10 MB file with 350 000 was
    /// checked for minutes (issue 27).
    static let maxFileBytes = 1 << 20

    /// `base`: what the file's settings go over (the defaults, with systemd's directories).
    public static func load(path: String, base: AgentConfiguration = AgentConfiguration()) throws -> AgentConfiguration {
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > maxFileBytes {
            throw StallAgentError.configuration(
                path: path, line: nil, message: "the file is \(info.st_size) bytes; a configuration is at most \(maxFileBytes) bytes")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StallAgentError.configuration(path: path, line: nil, message: "cannot read the file (missing or not readable)")
        }
        return try parse(String(decoding: data, as: UTF8.self), path: path, base: base)
    }

    public static func parse(_ text: String, path: String, base: AgentConfiguration = AgentConfiguration()) throws
        -> AgentConfiguration
    {
        func fail(_ node: Node?, _ message: String) -> StallAgentError {
            .configuration(path: path, line: node?.mark?.line, message: message)
        }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw StallAgentError.configuration(path: path, line: Self.line(of: error), message: "not valid YAML: \(Self.problem(of: error))")
        }
        var configuration = base
        var labels = Set<String>()
        guard let root else { throw fail(nil, "the file is empty; it needs at least a 'targets:' list") }
        guard let top = root.mapping else { throw fail(root, "expected a mapping of settings (key: value) at the top level") }

        func string(_ node: Node, _ key: String) throws -> String {
            guard let scalar = node.scalar else { throw fail(node, "'\(key)' must be a single value") }
            return scalar.string
        }
        /// Sets a setting from its node: one value, or for a repeatable setting a list (or one
        /// value standing for a list of one), each item checked with its own line.
        @discardableResult
        func apply<Root>(_ binding: SettingBinding<Root>, _ node: Node, to root: inout Root) throws -> [String] {
            let key = binding.setting.configKey ?? binding.setting.name
            let items = binding.isList ? (node.sequence.map(Array.init) ?? [node]) : [node]
            var texts: [String] = []
            for item in items {
                let text = try string(item, key)
                do throws(SettingProblem) {
                    try binding.apply([text], to: &root)
                } catch {
                    throw fail(item, "'\(key)': \(error)")
                }
                texts.append(text)
            }
            return texts
        }

        var targetsNode: Node?
        for (keyNode, node) in top {
            let key = keyNode.string ?? ""
            guard topLevelKeys.contains(key) else {
                throw fail(keyNode, "unknown setting '\(key)' (known: \(topLevelKeys.sorted().joined(separator: ", ")))")
            }
            if let binding = settingBindings.binding(configKey: key) {
                try apply(binding, node, to: &configuration)
                continue
            }
            switch key {
            case "retention":
                guard let mapping = node.mapping else { throw fail(node, "'retention' must be a mapping (max-reports, max-bytes, max-age)") }
                for (subKeyNode, subValue) in mapping {
                    let subKey = subKeyNode.string ?? ""
                    guard let binding = settingBindings.binding(configKey: subKey, section: "retention") else {
                        throw fail(subKeyNode, "unknown retention setting '\(subKey)' (known: \(retentionKeys.sorted().joined(separator: ", ")))")
                    }
                    try apply(binding, subValue, to: &configuration)
                }
            case "targets": targetsNode = node
            default: break
            }
        }

        guard let targetsNode else { throw fail(root, "no 'targets:' list: name at least one unit, pidfile or pid to watch") }
        guard let sequence = targetsNode.sequence, !sequence.isEmpty else {
            throw fail(targetsNode, "'targets' must be a non-empty list, e.g. '- unit: nginx.service'")
        }
        for item in sequence {
            guard let mapping = item.mapping else { throw fail(item, "each target must be a mapping, e.g. '- unit: nginx.service'") }
            var selector: TargetSpec.Selector?
            var target = TargetSpec(selector: .pid(0))
            for (keyNode, value) in mapping {
                let key = keyNode.string ?? ""
                guard targetKeys.contains(key) else {
                    throw fail(keyNode, "unknown target setting '\(key)' (known: \(targetKeys.sorted().joined(separator: ", ")))")
                }
                func choose(_ new: TargetSpec.Selector) throws {
                    guard selector == nil else { throw fail(keyNode, "a target has exactly one of 'unit', 'pidfile' or 'pid'") }
                    selector = new
                }
                if let binding = MonitorOptions.settingBindings.binding(configKey: key) {
                    // Checked here, with its line; applied over the base options per target.
                    var scratch = MonitorOptions()
                    target.overrides[key, default: []] += try apply(binding, value, to: &scratch)
                    continue
                }
                switch key {
                case "pid":
                    let text = try string(value, key)
                    guard let pid = Int32(text), pid > 0 else { throw fail(value, "'pid': '\(text)' is not a process id") }
                    try choose(.pid(pid))
                case "pidfile": try choose(.pidfile(try string(value, key)))
                case "unit":
                    let name = try string(value, key)
                    guard TargetSpec.isValidUnitName(name) else {
                        throw fail(value, "'unit': '\(name)' is not a unit name (e.g. nginx.service)")
                    }
                    try choose(.unit(TargetSpec.normalizedUnitName(name)))
                case "name": target.name = try string(value, key)
                case "processes":
                    let text = try string(value, key)
                    guard let processes = TargetSpec.Processes(rawValue: text) else {
                        throw fail(value, "'processes': '\(text)' is not one of all, main")
                    }
                    target.processes = processes
                default: break
                }
            }
            guard let selector else { throw fail(item, "a target needs one of 'unit', 'pidfile' or 'pid'") }
            target.selector = selector
            if case .pidfile = selector, target.processes == .all {
                throw fail(item, "'processes: all' applies to a unit or a pid, not a pidfile")
            }
            guard labels.insert(target.label).inserted else {
                throw fail(item, "two targets are both named '\(target.label)'; give one a 'name:'")
            }
            configuration.targets.append(target)
        }
        return configuration
    }

    static func line(of error: YamlError) -> Int? {
        switch error {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _): return mark.line
        default: return nil
        }
    }

    static func problem(of error: YamlError) -> String {
        switch error {
        case .scanner(_, let problem, _, _), .parser(_, let problem, _, _), .composer(_, let problem, _, _): return problem
        default: return "\(error)"
        }
    }
}
