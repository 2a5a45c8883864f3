import StallMonitoring
import StallProc

/// The host agent's settings (metrics, state, retention, restarts): only `watch` and the config
/// file have them.
extension Settings {
    public static let stateDirectory = Setting<String>(
        flag: "state-dir", configKey: "state-dir", valueName: "dir",
        help:
            "Keep per-stall fingerprint state (rate limits, annealing) here across restarts. Default: the first StateDirectory= entry under systemd, else not kept."
    )

    public static let metricsFile = Setting<String>(
        flag: "metrics-file", configKey: "metrics-file", valueName: "path",
        help: "Write Prometheus metrics to this file atomically (node_exporter textfile collector).")

    public static let metricsListen = Setting<String>(
        flag: "metrics-listen", configKey: "metrics-listen", valueName: "addr:port",
        help: "Serve Prometheus metrics on HOST:PORT at /metrics.")

    public static let metricsInterval = Setting<TimeSpan>(
        flag: "metrics-interval", configKey: "metrics-interval", valueName: "duration",
        help: "How often the metrics file is rewritten.",
        default: .seconds(15), range: .milliseconds(100)...longestDuration)

    public static let metricsFingerprints = Setting<Int>(
        flag: "metrics-fingerprints", configKey: "metrics-fingerprints", valueName: "count",
        help:
            "Fingerprints per target with a series of their own in stallagent_stall_fingerprint_total; the least recent beyond it are counted as fingerprint=\"other\".",
        default: 20, range: 1...1000)

    /// The command line allowed 50 ms, the config file 100 ms: the lower bound won, so that no
    /// value that worked before is refused now.
    public static let retryInterval = Setting<TimeSpan>(
        flag: "retry-interval", configKey: "retry-interval", valueName: "duration",
        help: "How often a --unit or --pidfile target that is not running is looked for.",
        default: .seconds(2), range: .milliseconds(50)...longestDuration)

    /// In the config file under `retention:`.
    public static let maxReports = Setting<Int>(
        flag: "max-reports", configKey: "max-reports", valueName: "count",
        help: "Keep at most this many reports in the report directory (oldest go first).")

    /// In the config file under `retention:`.
    public static let maxReportBytes = Setting<ByteSize>(
        flag: "max-report-bytes", configKey: "max-bytes", valueName: "size",
        help: "Keep the report directory under this size, e.g. 200MB.",
        range: ByteSize(bytes: 1)...(.exbibytes(4)))

    /// In the config file under `retention:`. Compared with file ages only, never turned into a
    /// deadline: the command line's 100 years won over the config file's 366 days.
    public static let maxReportAge = Setting<TimeSpan>(
        flag: "max-report-age", configKey: "max-age", valueName: "duration",
        help: "Delete reports older than this, e.g. 30d.",
        range: .seconds(1)...(.days(36600)))
}

extension AgentConfiguration {
    /// Where each setting of the host agent goes: the watch settings (into `monitor`), then
    /// the host's own. The config file, `watch`'s command line and `--print-config` go
    /// through these.
    public static let settingBindings: [SettingBinding<AgentConfiguration>] =
        MonitorOptions.settingBindings.map { $0.lifted(\.monitor) } + [
            .value(Settings.stateDirectory, get: \.stateDirectory, set: { $0.stateDirectory = $1 }),
            .value(Settings.metricsFile, get: \.metricsFile, set: { $0.metricsFile = $1 }),
            .value(Settings.metricsListen, get: \.metricsListen, set: { $0.metricsListen = $1 }),
            .value(
                Settings.metricsInterval, get: { .seconds($0.metricsInterval) }, set: { $0.metricsInterval = $1.seconds }),
            .value(Settings.metricsFingerprints, get: \.metricsFingerprints, set: { $0.metricsFingerprints = $1 }),
            .value(Settings.retryInterval, get: { .seconds($0.retryInterval) }, set: { $0.retryInterval = $1.seconds }),
            .value(
                Settings.maxReports, section: "retention", get: \.retention.maxReports,
                set: { $0.retention.maxReports = $1 }),
            .value(
                Settings.maxReportBytes, section: "retention", get: { $0.retention.maxBytes.map(ByteSize.init(bytes:)) },
                set: { $0.retention.maxBytes = $1.bytes }),
            .value(
                Settings.maxReportAge, section: "retention", get: { $0.retention.maxAge.map(TimeSpan.seconds) },
                set: { $0.retention.maxAge = $1.seconds }),
        ]

    /// The settings a target of the config file may give for itself, applied over the
    /// file's and the command line's (`TargetSpec.monitorOptions(base:)`).
    public static let targetSettings: [any AnySetting] = [
        Settings.threshold, Settings.launchThreshold, Settings.killAfter, Settings.idleSyscalls,
        Settings.idleFrames, Settings.busyFrames, Settings.appFrames,
    ]
}

extension Settings {
    /// The host's settings, for the tests that walk the table.
    public static let host: [any AnySetting] = AgentConfiguration.settingBindings.map(\.setting).filter { setting in
        !MonitorOptions.settingBindings.contains { $0.setting.flag == setting.flag && $0.setting.configKey == setting.configKey }
    }
}

extension AgentConfiguration {
    /// What `watch` runs with, each source over the one before: the table's defaults;
    /// systemd's directories (`STATE_DIRECTORY`: state kept there, reports in its `reports/`);
    /// the config file; the command line (texts by flag). A target's own settings in the file
    /// go over all of these, for that target. Throws `SettingProblem` for a bad command-line
    /// value and `StallAgentError` for the file.
    public static func resolve(configFile: String?, commandLine: [String: [String]], environment: [String: String]) throws
        -> AgentConfiguration
    {
        var configuration = AgentConfiguration()
        if let state = SystemdDirectories(environment: environment).stateDirectory {
            configuration.stateDirectory = state
            configuration.monitor.reportDirectory = state + "/reports"
        }
        if let configFile { configuration = try load(path: configFile, base: configuration) }
        try settingBindings.apply(commandLine: commandLine, to: &configuration)
        return configuration
    }
}

extension AgentConfiguration {
    /// The resolved settings as a config file holding them would read (`watch --print-config`,
    /// as `sshd -T` prints its own): every setting with its value, unset ones and command-line-only
    /// ones as comments, then the targets with their own settings. Values are single-quoted,
    /// so the text reads back as the same configuration.
    public func settingsText() -> String {
        func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
        func line(_ binding: SettingBinding<AgentConfiguration>, indent: String) -> String {
            let texts = binding.texts(in: self)
            guard let key = binding.setting.configKey else {
                return "# --\(binding.setting.name) (command line only): \(texts.first ?? "unset")"
            }
            if binding.isList { return "\(indent)\(key): [\(texts.map(quoted).joined(separator: ", "))]" }
            guard let text = texts.first else { return "\(indent)# \(key): unset" }
            return "\(indent)\(key): \(quoted(text))"
        }
        var lines = ["# stallagent watch --print-config: defaults < STATE_DIRECTORY < config file < command line"]
        lines += Self.settingBindings.filter { $0.configSection == nil }.map { line($0, indent: "") }
        lines.append("retention:")
        lines += Self.settingBindings.filter { $0.configSection == "retention" }.map { line($0, indent: "  ") }
        lines.append(targets.isEmpty ? "targets: []" : "targets:")
        for target in targets {
            switch target.selector {
            case .pid(let pid): lines.append("  - pid: \(pid)")
            case .pidfile(let path): lines.append("  - pidfile: \(quoted(path))")
            case .unit(let unit): lines.append("  - unit: \(quoted(unit))")
            }
            if let name = target.name { lines.append("    name: \(quoted(name))") }
            if let processes = target.processes { lines.append("    processes: \(processes.rawValue)") }
            for binding in MonitorOptions.settingBindings {
                guard let key = binding.setting.configKey, let texts = target.overrides[key], let last = texts.last else { continue }
                lines.append(
                    binding.isList ? "    \(key): [\(texts.map(quoted).joined(separator: ", "))]" : "    \(key): \(quoted(last))")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
