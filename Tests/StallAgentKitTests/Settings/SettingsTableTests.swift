import Foundation
import Testing
@testable import StallProc
@testable import StallReports
@testable import StallMonitoring
@testable import StallWrapper
@testable import StallHost

/// The command line and the config file hold every setting to the one table: the same
/// default, the same bounds, the same message for the same bad value.
@Suite struct SettingsTableTests {
    let agent = FixtureProcess.stallagentURL
    static let allSettings = Settings.watch + Settings.host + Settings.wrapper

    /// Bad texts of every kind of value: negative, huge, NaN, infinite, malformed, zero.
    static func badTexts(for setting: any AnySetting) -> [String] {
        switch setting {
        case is Setting<TimeSpan>: ["-1s", "1e300s", "1e400", "nan", "inf", "soon", "-0.0001ms"]
        case is Setting<ByteSize>: ["-1", "0", "1e30", "99999999999TiB", "lots", "nan"]
        case is Setting<Int>: ["0", "-3", "1.5", "99999999999999999999", "many"]
        case is Setting<LoopTurnMode>: ["sometimes", ""]
        case is Setting<SystemCall>: ["nosuchcall"]
        default: []
        }
    }

    /// Settings the config file nests under `retention:`.
    static let retentionKeys: Set<String> = ["max-reports", "max-bytes", "max-age"]

    static func yaml(_ key: String, _ text: String) -> (text: String, line: Int) {
        let value = "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        return retentionKeys.contains(key)
            ? ("retention:\n  \(key): \(value)\ntargets:\n  - pid: 1\n", 2)
            : ("\(key): \(value)\ntargets:\n  - pid: 1\n", 1)
    }

    @Test func everySettingWithAKeyIsReadByTheConfigFile() {
        let known = AgentConfiguration.topLevelKeys.union(AgentConfiguration.targetKeys).union(AgentConfiguration.retentionKeys)
        for setting in Self.allSettings {
            guard let key = setting.configKey else { continue }
            #expect(known.contains(key), "\(key)")
        }
    }

    @Test func everyDefaultReadsBackAsItself() {
        for setting in Self.allSettings {
            guard let text = setting.defaultText else { continue }
            #expect(setting.problem(with: text) == nil, "\(setting.flag ?? "?") default \(text)")
        }
    }

    /// What a config file without the setting and a command line without the flag both get.
    @Test func defaultsAreTheTablesOnBothPaths() throws {
        let file = try AgentConfiguration.parse("targets:\n  - pid: 1\n", path: "/x.yaml")
        for options in [MonitorOptions(), file.monitor] {
            #expect(options.threshold == Settings.threshold.defaultValue?.seconds)
            #expect(options.launchThreshold == Settings.launchThreshold.defaultValue?.seconds)
            #expect(options.probeInterval == Settings.probeInterval.defaultValue?.seconds)
            #expect(options.sampleInterval == Settings.sampleInterval.defaultValue?.seconds)
            #expect(options.loopTurns == Settings.loopTurns.defaultValue)
            #expect(options.maxStackBytes == Settings.maxStack.defaultValue.map { Int($0.bytes) })
            #expect(options.perfSampling == Settings.perfSampling.defaultValue)
            #expect(options.redactArgv == !(Settings.keepArgv.defaultValue ?? true))
            #expect(options.quiet == Settings.quiet.defaultValue)
            #expect(options.reportDirectory == Settings.reportDirectory.defaultValue)
            #expect(options.minimumReportInterval == Settings.minReportInterval.defaultValue?.seconds)
            #expect(options.killAfter == nil && Settings.killAfter.defaultValue == nil)
        }
        #expect(file.metricsInterval == Settings.metricsInterval.defaultValue?.seconds)
        #expect(file.retryInterval == Settings.retryInterval.defaultValue?.seconds)
        #expect(file.retention == ReportRetention())
        #expect(RunOptions().onStall == Settings.onStall.defaultValue)
        // The command line declares its options from the same entries: its help shows each default.
        let help = try runCommand(agent, ["watch", "--help"]).stdout + (try runCommand(agent, ["run", "--help"]).stdout)
        let flat = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for setting in Self.allSettings {
            guard let flag = setting.flag else { continue }
            #expect(flat.contains("--\(flag)"), "--\(flag) missing from --help")
            guard let text = setting.defaultText, setting is Setting<TimeSpan> || setting is Setting<ByteSize> else { continue }
            if flag == "launch-threshold" { continue }  // its help says the default, which depends on the mode
            #expect(flat.contains("(default: \(text))"), "--\(flag) default \(text)")
        }
    }

    @Test func outOfRangeValuesAreAcceptedNowhere() throws {
        for (setting, text) in [
            (Settings.threshold, "9ms"), (Settings.threshold, "367d"), (Settings.retryInterval, "49ms"),
            (Settings.metricsInterval, "99ms"), (Settings.maxReportAge, "36601d"),
        ] {
            #expect(throws: SettingProblem.self) { try setting.parse(text) }
        }
        #expect(try Settings.retryInterval.parse("50ms") == .milliseconds(50))
        #expect(try Settings.maxReportAge.parse("36600d") == .days(36600))
        #expect(try Settings.maxStack.parse("64k") == .kibibytes(64))
        #expect(throws: SettingProblem.self) { try Settings.maxStack.parse("4095") }
        #expect(try Settings.launchThreshold.parse("off") == .forever)
        #expect(throws: SettingProblem.self) { try Settings.threshold.parse("off") }
    }

    /// Each bad value: exit 64 and `--flag: PROBLEM` on the command line, exit 78 and
    /// `FILE:LINE: 'key': PROBLEM` in the config file, PROBLEM the same.
    @Test func everyBadValueIsRefusedTheSameWayOnBothPaths() throws {
        var cases: [(flag: String, text: String, problem: SettingProblem)] = []
        for setting in Self.allSettings {
            guard let flag = setting.flag, let key = setting.configKey else { continue }
            for text in Self.badTexts(for: setting) {
                guard let problem = setting.problem(with: text) else {
                    Issue.record("--\(flag) \(text) accepted")
                    continue
                }
                let (yaml, line) = Self.yaml(key, text)
                do {
                    _ = try AgentConfiguration.parse(yaml, path: "/etc/stallagent/stallagent.yaml")
                    Issue.record("\(key): \(text) accepted")
                } catch let error as StallAgentError {
                    #expect(error.exitCode == 78)
                    #expect("\(error)" == "/etc/stallagent/stallagent.yaml:\(line): '\(key)': \(problem)")
                }
                cases.append((flag, text, problem))
            }
        }
        #expect(cases.count > 50)
        // The command line: two agents per value (`--flag VALUE` and `--flag=VALUE`), each an
        // independent process, four at a time.
        let agent = agent
        let arguments = cases.flatMap { flag, text, _ in
            [["watch", "--pid", "1", "--\(flag)", text]] + (text.isEmpty ? [] : [["watch", "--pid", "1", "--\(flag)=\(text)"]])
        }
        let results = Dictionary(
            uniqueKeysWithValues: zip(arguments.map { $0.joined(separator: " ") }, try concurrentMap(arguments.count) { try runCommand(agent, arguments[$0]) }))
        for (flag, text, problem) in cases {
            let cli = try #require(results["watch --pid 1 --\(flag) \(text)"])
            #expect(cli.status == 64, "--\(flag) \(text): \(cli.stderr)")
            #expect(cli.stderr.contains("Error: --\(flag): \(problem)"), "--\(flag) \(text): \(cli.stderr)")
            // `--flag=` is ArgumentParser's "missing value", also exit 64.
            if !text.isEmpty {
                let joined = try #require(results["watch --pid 1 --\(flag)=\(text)"])
                #expect(joined.status == 64 && joined.stderr.contains("Error: --\(flag): \(problem)"), "\(joined.stderr)")
            }
        }
    }

    /// The whole way through the binary, and the new `perf-sampling` and `keep-argv` keys.
    @Test func aBadConfigFileExits78WithItsLine() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID().uuidString).yaml").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        for (text, message) in [
            ("perf-sampling: false\nmax-stack: -1\n", ":2: 'max-stack': '-1' is out of range (4KiB to 64MiB)"),
            ("probe-interval: 1e300s\n", ":1: 'probe-interval': '1e300s' is out of range (1ms to 366d)"),
            ("keep-argv: perhaps\n", ":1: 'keep-argv': 'perhaps' is not true or false"),
        ] {
            try (text + "targets:\n  - pid: 1\n").write(toFile: path, atomically: true, encoding: .utf8)
            let result = try runCommand(agent, ["--config", path])
            #expect(result.status == 78, "\(result.stderr)")
            #expect(result.stderr.contains(path + message), "\(result.stderr)")
        }
        let configuration = try AgentConfiguration.parse(
            "perf-sampling: no\nkeep-argv: true\nmax-stack: 1MiB\ntargets:\n  - pid: 1\n", path: "/x.yaml")
        #expect(!configuration.monitor.perfSampling && !configuration.monitor.redactArgv)
        #expect(configuration.monitor.maxStackBytes == 1 << 20)
    }

    /// A value of the setting other than its default, and how it prints back.
    static func sample(for setting: any AnySetting) -> (text: String, printed: String)? {
        switch setting {
        case is Setting<TimeSpan>: ("7s", "7s")
        case is Setting<ByteSize>: ("1MiB", "1MiB")
        case is Setting<Int>: ("7", "7")
        case is Setting<LoopTurnMode>: ("stack-rule", "stack-rule")
        case is Setting<SystemCall>: ("futex", "\(ProcSyscallInfo.number(ofSyscall: "futex")!)")
        case is Setting<String>: ("/tmp/sample dir", "/tmp/sample dir")
        case is Setting<Bool>:
            setting.defaultText == "true" ? ("false", "false") : ("true", "true")
        default: nil
        }
    }

    static func printed(_ key: String, _ text: String, list: Bool, indent: String = "") -> String {
        list ? "\(indent)\(key): ['\(text)']" : "\(indent)\(key): '\(text)'"
    }

    /// Walks the table through the binary: every watch and host setting given by its flag, by
    /// its key in the config file and (where a target may have it) by a target, and read back
    /// with `--print-config`; every wrapper setting reaches `run`'s checks by its flag.
    @Test func everySettingReachesItsUseFromEachPlaceItHas() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reach-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var runs: [(what: String, arguments: [String], expected: String)] = []
        for binding in AgentConfiguration.settingBindings {
            let setting = binding.setting
            let (text, printed) = try #require(Self.sample(for: setting), "\(setting.name): no sample value")
            if let flag = setting.flag {
                let isSwitch = setting is Setting<Bool>
                let expected =
                    setting.configKey.map { Self.printed($0, printed, list: binding.isList, indent: binding.configSection == nil ? "" : "  ") }
                    ?? "# --\(flag) (command line only): \(printed)"
                runs.append(("--\(flag)", ["watch", "--print-config"] + (isSwitch ? ["--\(flag)"] : ["--\(flag)", text]), expected))
            }
            guard let key = setting.configKey else { continue }
            let value = "'" + text + "'"
            let file = directory + "/\(key).yaml"
            let body = binding.configSection.map { "\($0):\n  \(key): \(value)\n" } ?? "\(key): \(value)\n"
            try (body + "targets:\n  - pid: 1\n").write(toFile: file, atomically: true, encoding: .utf8)
            let indent = binding.configSection == nil ? "" : "  "
            runs.append(
                ("\(key) in the file", ["watch", "--config", file, "--print-config"], Self.printed(key, printed, list: binding.isList, indent: indent)))
            if AgentConfiguration.targetSettings.contains(where: { $0.configKey == key }) {
                let targetFile = directory + "/target-\(key).yaml"
                try "targets:\n  - pid: 1\n    \(key): \(value)\n".write(toFile: targetFile, atomically: true, encoding: .utf8)
                runs.append(
                    (
                        "\(key) in a target", ["watch", "--config", targetFile, "--print-config"],
                        // A target's own settings print as the file gave them.
                        Self.printed(key, text, list: binding.isList, indent: "    ")
                    ))
            }
        }
        // The wrapper's settings have no --print-config: a bad value refused with the table's
        // message shows the flag reached its binding.
        for setting in Settings.wrapper {
            let flag = try #require(setting.flag)
            let problem = try #require(setting.problem(with: "bogus"))
            runs.append(("run --\(flag)", ["run", "--\(flag)", "bogus", "--", "true"], "Error: --\(flag): \(problem)"))
        }
        #expect(runs.count > 40)
        let agent = agent
        let arguments = runs.map(\.arguments)
        let results = try concurrentMap(arguments.count) { try runCommand(agent, arguments[$0]) }
        for (run, result) in zip(runs, results) {
            #expect((result.stdout + result.stderr).contains(run.expected), "\(run.what): expected \(run.expected) in \(result.stdout) \(result.stderr)")
        }
        // Every setting of the table is bound somewhere.
        let bound = Set((AgentConfiguration.settingBindings.map(\.setting) + RunOptions.settingBindings.map(\.setting)).map(\.name))
        #expect(Set(Self.allSettings.map(\.name)).subtracting(bound).isEmpty)
    }

    @Test func valuesPrintAsTheyAreTyped() {
        #expect(TimeSpan.milliseconds(10).description == "10ms")
        #expect(TimeSpan.seconds(1.5).description == "1.5s")
        #expect(TimeSpan.seconds(90).description == "90s")
        #expect(TimeSpan.days(366).description == "366d")
        #expect(TimeSpan.seconds(1e300).description.hasSuffix("s"))
        #expect(ByteSize.kibibytes(512).description == "512KiB")
        #expect(ByteSize(bytes: 200_000_000).description == "200MB")
        #expect(ByteSize(bytes: 4097).description == "4097B")
    }
}
