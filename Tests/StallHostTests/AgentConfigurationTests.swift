import Foundation
import Testing
@testable import StallProc
@testable import StallReports
@testable import StallMonitoring
@testable import StallHost

@Suite struct AgentConfigurationTests {
    static let examplePath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("config/stallagent.yaml.example").path

    @Test func theShippedExampleParses() throws {
        let configuration = try AgentConfiguration.load(path: Self.examplePath)
        #expect(configuration.targets.count == 2)
        #expect(configuration.targets[0].selector == .unit("nginx.service"))
        #expect(configuration.targets[1].selector == .pidfile("/run/myapp/myapp.pid"))
        #expect(configuration.targets[1].label == "myapp")
        #expect(configuration.targets[1].overrides["threshold"] == ["250ms"])
        #expect(configuration.monitor.threshold == 1)
        #expect(configuration.monitor.minimumReportInterval == 600)
        #expect(configuration.retention == ReportRetention(maxReports: 500, maxBytes: 200_000_000, maxAge: 30 * 86400))
        #expect(configuration.metricsFile == "/var/lib/stallagent/metrics/stallagent.prom")
        let options = configuration.targets[1].monitorOptions(base: configuration.monitor)
        #expect(options.threshold == 0.25 && options.launchThreshold == 10)
        #expect(options.extraIdleSyscalls.contains(ProcSyscallInfo.number(ofSyscall: "read")!))
    }

    /// A unit is watched as a whole unless it says `processes: main`; a pid only with `all`.
    @Test func processesSelectWhatIsWatched() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("processes-\(UUID().uuidString).yaml").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "targets:\n  - unit: a\n  - unit: b\n    processes: main\n  - pid: 7\n  - pid: 8\n    processes: all\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        let targets = try AgentConfiguration.load(path: path).targets
        #expect(targets.map(\.watchesAllProcesses) == [true, false, false, true])
    }

    /// Every mistake names its file and line.
    @Test(
        arguments: [
            ("threshold: 1s\ntargets:\n  - unit: a.service\n    treshold: 2s\n", 4, "unknown target setting 'treshold'"),
            ("threshold: soon\ntargets:\n  - pid: 1\n", 1, "not a duration"),
            ("retention:\n  max-reports: -3\ntargets:\n  - pid: 1\n", 2, "not a positive whole number"),
            ("retention:\n  max-size: 3\ntargets:\n  - pid: 1\n", 2, "unknown retention setting 'max-size'"),
            ("bogus: 1\ntargets:\n  - pid: 1\n", 1, "unknown setting 'bogus'"),
            ("targets:\n  - unit: a.service\n    pid: 3\n", 3, "exactly one of"),
            ("targets:\n  - name: x\n", 2, "needs one of"),
            ("targets:\n  - unit: 'bad unit!'\n", 2, "not a unit name"),
            ("targets:\n  - pid: 1\n    idle-syscalls: [nosuchcall]\n", 3, "unknown system call 'nosuchcall'"),
            ("targets:\n  - unit: a\n  - unit: a\n", 3, "both named 'a.service'"),
            ("threshold: 1s\ntargets: [\n", 3, "not valid YAML"),
            ("threshold: 1s\n", 1, "no 'targets:' list"),
            ("loop-turns: sometimes\ntargets:\n  - pid: 1\n", 1, "not one of auto, kernel-counter, stack-rule"),
            ("targets:\n  - unit: a\n    processes: some\n", 3, "'processes': 'some' is not one of all, main"),
            ("targets:\n  - pidfile: /run/a.pid\n    processes: all\n", 2, "not a pidfile"),
        ] as [(String, Int, String)])
    func mistakesNameTheirLine(text: String, line: Int, message: String) {
        do {
            _ = try AgentConfiguration.parse(text, path: "/etc/stallagent/stallagent.yaml")
            Issue.record("accepted: \(text)")
        } catch let error as StallAgentError {
            #expect(error.exitCode == 78)
            let description = "\(error)"
            #expect(description.hasPrefix("/etc/stallagent/stallagent.yaml:\(line): "), "\(description)")
            #expect(description.contains(message), "\(description)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func loopTurnSettings() throws {
        let configuration = try AgentConfiguration.parse(
            "loop-turns: stack-rule\nbusy-frames: [pg_sleep]\ntargets:\n  - pid: 1\n    busy-frames: [\"*execSync*\"]\n",
            path: "/etc/stallagent/stallagent.yaml")
        #expect(configuration.monitor.loopTurns == .stackRule)
        let options = configuration.targets[0].monitorOptions(base: configuration.monitor)
        #expect(options.busyFramePatterns == ["pg_sleep", "*execSync*"])
    }

    @Test func aMissingFileIsAConfigurationError() {
        #expect(throws: StallAgentError.configuration(path: "/nonexistent.yaml", line: nil, message: "cannot read the file (missing or not readable)")) {
            try AgentConfiguration.load(path: "/nonexistent.yaml")
        }
    }

    @Test func sizesAndDurations() {
        #expect(ByteSizeParser.parse("200MB") == 200_000_000)
        #expect(ByteSizeParser.parse("1GiB") == 1 << 30)
        #expect(ByteSizeParser.parse("64k") == 65536)
        #expect(ByteSizeParser.parse("12") == 12)
        #expect(ByteSizeParser.parse("lots") == nil)
        #expect(ByteSizeParser.parse("-1MB") == nil)
        #expect(DurationParser.parse("30d") == 2_592_000.0)
        #expect(DurationParser.parse("250ms") == 0.25)
    }

    @Test func unitNames() {
        #expect(TargetSpec.normalizedUnitName("nginx") == "nginx.service")
        #expect(TargetSpec.normalizedUnitName("getty@tty1.service") == "getty@tty1.service")
        #expect(TargetSpec.isValidUnitName("getty@tty1.service"))
        #expect(!TargetSpec.isValidUnitName("a b"))
        #expect(!TargetSpec.isValidUnitName("-rf"))
    }
}
