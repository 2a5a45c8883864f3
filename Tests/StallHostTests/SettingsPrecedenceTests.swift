import Foundation
import Testing
@testable import StallMonitoring
@testable import StallHost
@testable import StallWrapper

/// Where a setting's value comes from when several sources give it, and what `--print-config`
/// shows of it.
@Suite struct SettingsPrecedenceTests {
    func withFile<T>(_ text: String, _ body: (String) throws -> T) throws -> T {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("precedence-\(UUID().uuidString).yaml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try body(path)
    }

    /// defaults < STATE_DIRECTORY < config file < command line; a target's own setting over all.
    @Test func eachSourceGoesOverTheOneBefore() throws {
        let environment = ["STATE_DIRECTORY": "/var/lib/stallagent"]
        let none = try AgentConfiguration.resolve(configFile: nil, commandLine: [:], environment: [:])
        #expect(none.monitor.threshold == 1 && none.stateDirectory == nil)
        #expect(none.monitor.reportDirectory == "stallagent-reports")

        let systemd = try AgentConfiguration.resolve(configFile: nil, commandLine: [:], environment: environment)
        #expect(systemd.stateDirectory == "/var/lib/stallagent")
        #expect(systemd.monitor.reportDirectory == "/var/lib/stallagent/reports")

        let file =
            "report-dir: /srv/r\nthreshold: 2s\nidle-frames: [a]\nretention: {max-reports: 5}\ntargets:\n  - pid: 1\n    threshold: 300ms\n    idle-frames: t\n"
        let fromFile = try withFile(file) { try AgentConfiguration.resolve(configFile: $0, commandLine: [:], environment: environment) }
        #expect(fromFile.monitor.reportDirectory == "/srv/r" && fromFile.stateDirectory == "/var/lib/stallagent")
        #expect(fromFile.monitor.threshold == 2 && fromFile.retention.maxReports == 5)

        let commandLine = ["threshold": ["1.5s"], "idle-frame": ["c"], "max-reports": ["9"], "state-dir": ["/s"]]
        let both = try withFile(file) { try AgentConfiguration.resolve(configFile: $0, commandLine: commandLine, environment: environment) }
        #expect(both.monitor.threshold == 1.5 && both.retention.maxReports == 9 && both.stateDirectory == "/s")
        #expect(both.monitor.reportDirectory == "/srv/r")
        // A repeatable setting adds: the file's, then the command line's, then the target's.
        #expect(both.monitor.idleFramePatterns == ["a", "c"])
        let target = both.targets[0].monitorOptions(base: both.monitor)
        #expect(target.threshold == 0.3 && target.idleFramePatterns == ["a", "c", "t"])
    }

    @Test func aBadCommandLineValueIsNamedByItsFlag() throws {
        #expect(throws: SettingProblem("--threshold: '5ms' is out of range (10ms to 366d)")) {
            try AgentConfiguration.resolve(configFile: nil, commandLine: ["threshold": ["5ms"]], environment: [:])
        }
        #expect(throws: SettingProblem("--on-stall: 'maybe' is not one of report, fail")) {
            try RunOptions(commandLine: ["on-stall": ["maybe"]])
        }
    }

    /// A wrapped run: no launch threshold, the batch threshold follows --threshold unless given.
    @Test func aRunsBatchThresholdFollowsItsThreshold() throws {
        #expect(try RunOptions(commandLine: ["threshold": ["2s"]]).monitor.batchThreshold == 2)
        #expect(try RunOptions(commandLine: ["batch-threshold": ["off"]]).monitor.batchThreshold == nil)
        #expect(try RunOptions(commandLine: ["batch-threshold": ["3s"]]).monitor.batchThreshold == 3)
        #expect(try RunOptions(commandLine: [:]).monitor.launchThreshold == .infinity)
    }

    /// What `--print-config` prints reads back as the same configuration.
    @Test func printedSettingsReadBackAsThemselves() throws {
        let file = """
            threshold: 2s
            idle-syscalls: [read, futex]
            idle-frames: ["it's", b]
            kill-after: 30s
            keep-argv: yes
            retention: {max-bytes: 200MB}
            targets:
              - unit: nginx
                processes: main
                threshold: 250ms
                app-frames: ["!vendor/*"]
              - pidfile: /run/a.pid
                name: a
            """
        let configuration = try withFile(file) {
            try AgentConfiguration.resolve(configFile: $0, commandLine: ["duration": ["5s"]], environment: [:])
        }
        let text = configuration.settingsText()
        #expect(text.contains("threshold: '2s'\n") && text.contains("idle-frames: ['it''s', 'b']\n"))
        #expect(text.contains("# --duration (command line only): 5s\n") && text.contains("  max-bytes: '200MB'\n"))
        #expect(text.contains("    threshold: '250ms'\n    app-frames: ['!vendor/*']\n"))
        let again = try AgentConfiguration.parse(text, path: "/printed.yaml")
        #expect(again.settingsText() == text.replacingOccurrences(of: "# --duration (command line only): 5s", with: "# --duration (command line only): unset"))
        #expect(again.targets == configuration.targets)
    }
}
