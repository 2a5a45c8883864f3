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

    /// The settings a config file may give for every target, by key.
    static let topLevelSettings: [any AnySetting] = [
        Settings.reportDirectory, Settings.stateDirectory, Settings.threshold, Settings.launchThreshold,
        Settings.probeInterval, Settings.sampleInterval, Settings.killAfter, Settings.idleSyscalls,
        Settings.idleFrames, Settings.busyFrames, Settings.appFrames, Settings.loopTurns, Settings.maxStack,
        Settings.perfSampling,
        Settings.keepArgv, Settings.debugDirectories, Settings.minReportInterval, Settings.metricsFile,
        Settings.metricsListen, Settings.metricsInterval, Settings.metricsFingerprints, Settings.retryInterval,
        Settings.quiet,
    ]
    /// The settings a target may override.
    static let targetSettings: [any AnySetting] = [
        Settings.threshold, Settings.launchThreshold, Settings.killAfter, Settings.idleSyscalls,
        Settings.idleFrames, Settings.busyFrames, Settings.appFrames,
    ]
    static let retentionSettings: [any AnySetting] = [Settings.maxReports, Settings.maxReportBytes, Settings.maxReportAge]

    static let topLevelKeys = Set(topLevelSettings.compactMap(\.configKey) + ["retention", "targets"])
    static let targetKeys = Set(targetSettings.compactMap(\.configKey) + ["pid", "pidfile", "unit", "name", "processes"])
    static let retentionKeys = Set(retentionSettings.compactMap(\.configKey))

    /// A configuration names a few hundred targets at most; a 10 MB file with 350 000 was
    /// checked for minutes (issue 27).
    static let maxFileBytes = 1 << 20

    public static func load(path: String) throws -> AgentConfiguration {
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > maxFileBytes {
            throw StallAgentError.configuration(
                path: path, line: nil, message: "the file is \(info.st_size) bytes; a configuration is at most \(maxFileBytes) bytes")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StallAgentError.configuration(path: path, line: nil, message: "cannot read the file (missing or not readable)")
        }
        return try parse(String(decoding: data, as: UTF8.self), path: path)
    }

    public static func parse(_ text: String, path: String) throws -> AgentConfiguration {
        func fail(_ node: Node?, _ message: String) -> StallAgentError {
            .configuration(path: path, line: node?.mark?.line, message: message)
        }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw StallAgentError.configuration(path: path, line: Self.line(of: error), message: "not valid YAML: \(Self.problem(of: error))")
        }
        var configuration = AgentConfiguration()
        var labels = Set<String>()
        guard let root else { throw fail(nil, "the file is empty; it needs at least a 'targets:' list") }
        guard let top = root.mapping else { throw fail(root, "expected a mapping of settings (key: value) at the top level") }

        func string(_ node: Node, _ key: String) throws -> String {
            guard let scalar = node.scalar else { throw fail(node, "'\(key)' must be a single value") }
            return scalar.string
        }
        func value<Value>(_ setting: Setting<Value>, _ node: Node) throws -> Value {
            let key = setting.configKey ?? setting.name
            let text = try string(node, key)
            do throws(SettingProblem) {
                return try setting.parse(text)
            } catch {
                throw fail(node, "'\(key)': \(error)")
            }
        }
        /// A list, or one value standing for a list of one.
        func values<Value>(_ setting: Setting<Value>, _ node: Node) throws -> [Value] {
            try (node.sequence.map(Array.init) ?? [node]).map { try value(setting, $0) }
        }
        func seconds(_ setting: Setting<TimeSpan>, _ node: Node) throws -> Double {
            try value(setting, node).seconds
        }

        var targetsNode: Node?
        for (keyNode, node) in top {
            let key = keyNode.string ?? ""
            guard topLevelKeys.contains(key) else {
                throw fail(keyNode, "unknown setting '\(key)' (known: \(topLevelKeys.sorted().joined(separator: ", ")))")
            }
            switch key {
            case Settings.reportDirectory.configKey: configuration.monitor.reportDirectory = try value(Settings.reportDirectory, node)
            case Settings.stateDirectory.configKey: configuration.stateDirectory = try value(Settings.stateDirectory, node)
            case Settings.threshold.configKey: configuration.monitor.threshold = try seconds(Settings.threshold, node)
            case Settings.launchThreshold.configKey: configuration.monitor.launchThreshold = try seconds(Settings.launchThreshold, node)
            case Settings.probeInterval.configKey: configuration.monitor.probeInterval = try seconds(Settings.probeInterval, node)
            case Settings.sampleInterval.configKey: configuration.monitor.sampleInterval = try seconds(Settings.sampleInterval, node)
            case Settings.killAfter.configKey: configuration.monitor.killAfter = try seconds(Settings.killAfter, node)
            case Settings.idleSyscalls.configKey:
                configuration.monitor.extraIdleSyscalls = Set(try values(Settings.idleSyscalls, node).map(\.number))
            case Settings.idleFrames.configKey: configuration.monitor.idleFramePatterns = try values(Settings.idleFrames, node)
            case Settings.busyFrames.configKey: configuration.monitor.busyFramePatterns = try values(Settings.busyFrames, node)
            case Settings.appFrames.configKey: configuration.monitor.appFramePatterns = try values(Settings.appFrames, node)
            case Settings.loopTurns.configKey: configuration.monitor.loopTurns = try value(Settings.loopTurns, node)
            case Settings.debugDirectories.configKey: configuration.monitor.debugDirectories = try values(Settings.debugDirectories, node)
            case Settings.maxStack.configKey: configuration.monitor.maxStackBytes = Int(try value(Settings.maxStack, node).bytes)
            case Settings.perfSampling.configKey: configuration.monitor.perfSampling = try value(Settings.perfSampling, node)
            case Settings.keepArgv.configKey: configuration.monitor.redactArgv = !(try value(Settings.keepArgv, node))
            case Settings.minReportInterval.configKey:
                configuration.monitor.minimumReportInterval = try seconds(Settings.minReportInterval, node)
            case Settings.metricsFile.configKey: configuration.metricsFile = try value(Settings.metricsFile, node)
            case Settings.metricsListen.configKey: configuration.metricsListen = try value(Settings.metricsListen, node)
            case Settings.metricsInterval.configKey: configuration.metricsInterval = try seconds(Settings.metricsInterval, node)
            case Settings.metricsFingerprints.configKey:
                configuration.metricsFingerprints = try value(Settings.metricsFingerprints, node)
            case Settings.retryInterval.configKey: configuration.retryInterval = try seconds(Settings.retryInterval, node)
            case Settings.quiet.configKey: configuration.monitor.quiet = try value(Settings.quiet, node)
            case "retention":
                guard let mapping = node.mapping else { throw fail(node, "'retention' must be a mapping (max-reports, max-bytes, max-age)") }
                for (subKeyNode, subValue) in mapping {
                    let subKey = subKeyNode.string ?? ""
                    switch subKey {
                    case Settings.maxReports.configKey: configuration.retention.maxReports = try value(Settings.maxReports, subValue)
                    case Settings.maxReportBytes.configKey: configuration.retention.maxBytes = try value(Settings.maxReportBytes, subValue).bytes
                    case Settings.maxReportAge.configKey: configuration.retention.maxAge = try seconds(Settings.maxReportAge, subValue)
                    default:
                        throw fail(subKeyNode, "unknown retention setting '\(subKey)' (known: \(retentionKeys.sorted().joined(separator: ", ")))")
                    }
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
                case Settings.threshold.configKey: target.threshold = try seconds(Settings.threshold, value)
                case Settings.launchThreshold.configKey: target.launchThreshold = try seconds(Settings.launchThreshold, value)
                case Settings.killAfter.configKey: target.killAfter = try seconds(Settings.killAfter, value)
                case Settings.idleSyscalls.configKey: target.extraIdleSyscalls = Set(try values(Settings.idleSyscalls, value).map(\.number))
                case Settings.idleFrames.configKey: target.idleFramePatterns = try values(Settings.idleFrames, value)
                case Settings.busyFrames.configKey: target.busyFramePatterns = try values(Settings.busyFrames, value)
                case Settings.appFrames.configKey: target.appFramePatterns = try values(Settings.appFrames, value)
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
