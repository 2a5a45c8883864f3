import Foundation
import Yams

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
    public var metricsInterval = 15.0
    public var retention = ReportRetention()
    /// How often a target that is not running is looked for again.
    public var retryInterval = 2.0

    public init() {}

    static let topLevelKeys: Set<String> = [
        "report-dir", "state-dir", "threshold", "launch-threshold", "probe-interval", "sample-interval",
        "kill-after", "idle-syscalls", "idle-frames", "max-stack", "min-report-interval", "metrics-file",
        "metrics-listen", "metrics-interval", "retention", "retry-interval", "targets", "quiet", "debug-dirs",
        "busy-frames", "loop-turns",
    ]
    static let targetKeys: Set<String> = [
        "pid", "pidfile", "unit", "name", "threshold", "launch-threshold", "kill-after", "idle-syscalls",
        "idle-frames", "busy-frames", "processes",
    ]
    static let retentionKeys: Set<String> = ["max-reports", "max-bytes", "max-age"]

    public static func load(path: String) throws -> AgentConfiguration {
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
        guard let root else { throw fail(nil, "the file is empty; it needs at least a 'targets:' list") }
        guard let top = root.mapping else { throw fail(root, "expected a mapping of settings (key: value) at the top level") }

        func string(_ node: Node, _ key: String) throws -> String {
            guard let scalar = node.scalar else { throw fail(node, "'\(key)' must be a single value") }
            return scalar.string
        }
        func duration(_ node: Node, _ key: String, minimum: Double = 0) throws -> Double {
            let text = try string(node, key)
            guard let value = DurationParser.parse(text), value.isFinite, value >= minimum else {
                throw fail(node, "'\(key)': '\(text)' is not a duration (examples: 1.5s, 250ms, 2m, 30d)")
            }
            // As on the command line: at most a year (larger values overflow deadlines).
            guard value <= 366 * 86400 else { throw fail(node, "'\(key)': '\(text)' is out of range (at most 366d)") }
            return value
        }
        func positiveInt(_ node: Node, _ key: String) throws -> Int {
            let text = try string(node, key)
            guard let value = Int(text), value > 0 else { throw fail(node, "'\(key)': '\(text)' is not a positive whole number") }
            return value
        }
        func list(_ node: Node, _ key: String) throws -> [(String, Node)] {
            if let sequence = node.sequence { return try sequence.map { (try string($0, key), $0) } }
            return [(try string(node, key), node)]
        }
        func syscalls(_ node: Node, _ key: String) throws -> Set<Int> {
            var numbers: Set<Int> = []
            for (name, item) in try list(node, key) {
                guard let number = ProcSyscallInfo.number(ofSyscall: name) ?? Int(name) else {
                    throw fail(item, "'\(key)': unknown system call '\(name)'")
                }
                numbers.insert(number)
            }
            return numbers
        }

        var targetsNode: Node?
        for (keyNode, value) in top {
            let key = keyNode.string ?? ""
            guard topLevelKeys.contains(key) else {
                throw fail(keyNode, "unknown setting '\(key)' (known: \(topLevelKeys.sorted().joined(separator: ", ")))")
            }
            switch key {
            case "report-dir": configuration.monitor.reportDirectory = try string(value, key)
            case "state-dir": configuration.stateDirectory = try string(value, key)
            case "threshold": configuration.monitor.threshold = try duration(value, key, minimum: 0.01)
            case "launch-threshold":
                let text = try string(value, key)
                configuration.monitor.launchThreshold = text.lowercased() == "off" ? .infinity : try duration(value, key, minimum: 0.01)
            case "probe-interval": configuration.monitor.probeInterval = try duration(value, key, minimum: 0.001)
            case "sample-interval": configuration.monitor.sampleInterval = try duration(value, key, minimum: 0.001)
            case "kill-after": configuration.monitor.killAfter = try duration(value, key, minimum: 0.01)
            case "idle-syscalls": configuration.monitor.extraIdleSyscalls = try syscalls(value, key)
            case "idle-frames": configuration.monitor.idleFramePatterns = try list(value, key).map(\.0)
            case "busy-frames": configuration.monitor.busyFramePatterns = try list(value, key).map(\.0)
            case "loop-turns":
                let text = try string(value, key)
                guard let mode = LoopTurnMode(rawValue: text) else {
                    throw fail(value, "'loop-turns': '\(text)' is not one of auto, kernel-counter, stack-rule")
                }
                configuration.monitor.loopTurns = mode
            case "debug-dirs": configuration.monitor.debugDirectories = try list(value, key).map(\.0)
            case "max-stack":
                let text = try string(value, key)
                guard let bytes = ByteSizeParser.parse(text), bytes >= 4096, bytes <= 64 << 20 else {
                    throw fail(value, "'max-stack': '\(text)' must be a size between 4KiB and 64MiB")
                }
                configuration.monitor.maxStackBytes = Int(bytes)
            case "min-report-interval": configuration.monitor.minimumReportInterval = try duration(value, key)
            case "metrics-file": configuration.metricsFile = try string(value, key)
            case "metrics-listen": configuration.metricsListen = try string(value, key)
            case "metrics-interval": configuration.metricsInterval = try duration(value, key, minimum: 0.1)
            case "retry-interval": configuration.retryInterval = try duration(value, key, minimum: 0.1)
            case "quiet":
                guard let flag = value.bool else { throw fail(value, "'quiet' must be true or false") }
                configuration.monitor.quiet = flag
            case "retention":
                guard let mapping = value.mapping else { throw fail(value, "'retention' must be a mapping (max-reports, max-bytes, max-age)") }
                for (subKeyNode, subValue) in mapping {
                    let subKey = subKeyNode.string ?? ""
                    switch subKey {
                    case "max-reports": configuration.retention.maxReports = try positiveInt(subValue, subKey)
                    case "max-bytes":
                        let text = try string(subValue, subKey)
                        guard let bytes = ByteSizeParser.parse(text), bytes > 0 else {
                            throw fail(subValue, "'max-bytes': '\(text)' is not a size (examples: 500MB, 2GiB)")
                        }
                        configuration.retention.maxBytes = bytes
                    case "max-age": configuration.retention.maxAge = try duration(subValue, subKey, minimum: 1)
                    default:
                        throw fail(subKeyNode, "unknown retention setting '\(subKey)' (known: \(retentionKeys.sorted().joined(separator: ", ")))")
                    }
                }
            case "targets": targetsNode = value
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
                case "threshold": target.threshold = try duration(value, key, minimum: 0.01)
                case "launch-threshold":
                    let text = try string(value, key)
                    target.launchThreshold = text.lowercased() == "off" ? .infinity : try duration(value, key, minimum: 0.01)
                case "kill-after": target.killAfter = try duration(value, key, minimum: 0.01)
                case "idle-syscalls": target.extraIdleSyscalls = try syscalls(value, key)
                case "idle-frames": target.idleFramePatterns = try list(value, key).map(\.0)
                case "busy-frames": target.busyFramePatterns = try list(value, key).map(\.0)
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
            if configuration.targets.contains(where: { $0.label == target.label }) {
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
