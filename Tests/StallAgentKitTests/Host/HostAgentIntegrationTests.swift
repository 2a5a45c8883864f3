import Foundation
import Testing
@testable import StallHost

#if canImport(Glibc)
import Glibc
#endif

/// The agent as systemd runs it: targets that restart, the journal, sd_notify, metrics,
/// retention and fingerprint state across agent restarts — real processes, real ptrace.
@Suite(.serialized, .tags(.laneOne)) struct HostAgentIntegrationTests {
    let agent = FixtureProcess.stallagentURL
    let fixtures = FixtureProcess.executableURL.path

    func temporaryDirectory(_ name: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A tmpfs of `size` on a fresh directory, for a disk that fills; the test is cancelled
    /// where it cannot be mounted (not root, no tmpfs). `removeTmpfs` unmounts and removes it.
    func tinyTmpfs(_ name: String, size: String) throws -> String {
        guard getuid() == 0 else { try Test.cancel("mounting a tiny tmpfs needs root") }
        let mountPoint = try temporaryDirectory(name)
        let mount = try runCommand(URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", mountPoint])
        guard mount.status == 0 else {
            try? FileManager.default.removeItem(atPath: mountPoint)
            try Test.cancel("cannot mount a tmpfs here: \(mount.stderr)")
        }
        return mountPoint
    }

    func removeTmpfs(_ mountPoint: String) {
        _ = try? runCommand(URL(fileURLWithPath: "/bin/umount"), [mountPoint])
        try? FileManager.default.removeItem(atPath: mountPoint)
    }

    /// Starts the agent with `environment` added and stderr in a file (so JOURNAL_STREAM can
    /// name it); returns the process and the stderr path.
    func startAgent(
        _ arguments: [String], environment: [String: String] = [:], journalStderr: Bool = false, executable: URL? = nil
    ) throws -> (Process, String) {
        let stderrPath = FileManager.default.temporaryDirectory.appendingPathComponent("agent-\(UUID().uuidString).err").path
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        var env = ProcessInfo.processInfo.environment.filter { !["NOTIFY_SOCKET", "JOURNAL_STREAM", "WATCHDOG_USEC", "STATE_DIRECTORY"].contains($0.key) }
        if journalStderr {
            var info = stat()
            stat(stderrPath, &info)
            env["JOURNAL_STREAM"] = "\(info.st_dev):\(info.st_ino)"
        }
        env.merge(environment) { $1 }
        let process = Process()
        process.executableURL = executable ?? agent
        process.arguments = arguments
        process.environment = env
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        try process.run()
        return (process, stderrPath)
    }

    func finish(_ process: Process, timeout: Double = 30) -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// A service that restarts: its pidfile names the new process, which is attached to and
    /// whose stall is reported; metrics count both runs and pass promtool.
    @Test(.tags(.timed)) func pidfileTargetIsFollowedAcrossRestarts() throws {
        let dir = try temporaryDirectory("pidfile")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pidfile = dir + "/app.pid"
        // Two runs of a loop that idles first, then stalls 1.3 s on CPU, then exits.
        let supervisor = Process()
        supervisor.executableURL = URL(fileURLWithPath: "/bin/sh")
        supervisor.arguments = [
            "-c",
            "for i in 1 2; do sh -c 'echo $$ > \(pidfile); exec \"$0\" loop --script idle:0.6,spin:1.3 --gap 0.3 --exit-when-done' '\(fixtures)' >/dev/null; sleep 0.4; done",
        ]
        try supervisor.run()
        defer {
            if supervisor.isRunning { kill(supervisor.processIdentifier, SIGKILL) }
            supervisor.waitUntilExit()
        }
        let (process, stderrPath) = try startAgent([
            "--pidfile", pidfile, "--name", "app", "--report-dir", dir + "/reports", "--state-dir", dir + "/state",
            "--metrics-file", dir + "/stallagent.prom", "--metrics-interval", "0.5s", "--retry-interval", "0.1s",
        ])
        // The spins are CPU time: on a loaded machine they take longer. Stop the agent once
        // both runs are over (SIGTERM finalises and exits 0).
        let deadline = Date().addingTimeInterval(60)
        while supervisor.isRunning && Date() < deadline { usleep(50_000) }
        // Both stalls have their detected and ended lines (two each).
        let lines = Date().addingTimeInterval(10)
        while Date() < lines, occurrences("0x8badf00d hang", in: (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "") < 4 {
            usleep(20_000)
        }
        kill(process.processIdentifier, SIGTERM)
        #expect(finish(process) == 0)
        let stderr = try String(contentsOfFile: stderrPath, encoding: .utf8)
        let attaches = stderr.components(separatedBy: "(pidfile \(pidfile))").count - 1
        #expect(attaches == 2, "\(stderr)")
        #expect(stderr.contains("exited; waiting for its next main process"))
        let reports = try FileManager.default.contentsOfDirectory(atPath: dir + "/reports").filter { $0.hasSuffix(".json") }
        #expect(reports.count >= 1, "\(stderr)")
        // The second process's stall is reported too (the first is 1, and its recurrence is 2).
        #expect(stderr.components(separatedBy: "0x8badf00d hang").count - 1 >= 4, "\(stderr)")
        let metrics = try String(contentsOfFile: dir + "/stallagent.prom", encoding: .utf8)
        #expect(metrics.contains(#"stallagent_target_attaches_total{target="app"} 2"#), "\(metrics)")
        #expect(metrics.contains(#"stallagent_stalls_total{target="app",reason="hang",code="0x8badf00d"} 2"#), "\(metrics)")
        try PromtoolCheck.check(metrics)
        let state = try String(contentsOfFile: dir + "/state/fingerprints/app.json", encoding: .utf8)
        #expect(state.contains("\"occurrences\":2"), "\(state)")
    }

    /// With stderr on the journal, each stall becomes structured journal entries.
    @Test func stallsGoToTheJournalAsStructuredEntries() throws {
        let dir = try temporaryDirectory("journal")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let journal = try DatagramReceiver()
        let fixture = try FixtureProcess(["loop", "--script", "spin:1.4", "--gap", "0.3", "--exit-when-done"])
        let (process, stderrPath) = try startAgent(
            ["--pid", "\(fixture.pid)", "--report-dir", dir, "--launch-threshold", "1s"], environment: ["STALLAGENT_JOURNAL_SOCKET": journal.path],
            journalStderr: true)
        #expect(finish(process) == 0)
        let entries = journal.drain(quietFor: 0.5).compactMap(JournalWriter.decode)
        let stderr = try String(contentsOfFile: stderrPath, encoding: .utf8)
        #expect(entries.count == 2, "\(entries) \(stderr)")
        func field(_ entry: [(String, String)], _ key: String) -> String? { entry.first { $0.0 == key }?.1 }
        let detected = try #require(entries.first { field($0, "MESSAGE_ID") == StallJournalEntry.detectedMessageID })
        let ended = try #require(entries.first { field($0, "MESSAGE_ID") == StallJournalEntry.endedMessageID })
        #expect(field(ended, "STALLAGENT_REASON_CODE") == "0x8badf00d")
        #expect(field(ended, "STALLAGENT_REASON") == "hang")
        #expect(field(ended, "PRIORITY") == "4")
        #expect(field(ended, "STALLAGENT_PID") == "\(fixture.pid)")
        #expect(field(ended, "STALLAGENT_FUNCTION") == "busy_compute")
        // One stall, one culprit: the detected entry names what the ended one does (issue 26).
        #expect(field(detected, "STALLAGENT_FUNCTION") == "busy_compute")
        // Issue 30: what groups one bug across hosts, where it is, and the stack in one line.
        #expect(field(ended, "STALLAGENT_FINGERPRINT")?.hasPrefix("hang-") == true)
        #expect(field(ended, "STALLAGENT_FINGERPRINT") == field(detected, "STALLAGENT_FINGERPRINT"))
        #expect((field(ended, "STALLAGENT_BUILD_ID") ?? "").count >= 32, "\(ended)")
        #expect(field(ended, "STALLAGENT_CULPRIT_FILE")?.contains("stall-fixtures/") == true, "\(ended)")
        #expect(Int(field(ended, "STALLAGENT_CULPRIT_LINE") ?? "") != nil, "\(ended)")
        let stack = field(ended, "STALLAGENT_STACK") ?? ""
        #expect(stack.contains(";busy_compute") && stack.utf8.count <= StallJournalEntry.stackLimit, "\(stack)")
        #expect(Double(field(ended, "STALLAGENT_DURATION_SEC") ?? "") ?? 0 > 1.0)
        #expect(field(ended, "MESSAGE")?.contains("0x8badf00d hang") == true)
        #expect(FileManager.default.fileExists(atPath: field(ended, "STALLAGENT_REPORT") ?? "/nonexistent"))
        #expect(field(detected, "STALLAGENT_ONGOING") == "1")
        // Stall lines went to the journal natively, not also as text on stderr.
        #expect(!stderr.contains("detected: main thread"), "\(stderr)")
    }

    /// Type=notify: READY=1 once watching, STATUS= lines, WATCHDOG=1 while the loop runs.
    @Test func notifiesSystemdAndFeedsTheWatchdog() throws {
        let dir = try temporaryDirectory("notify")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let notify = try DatagramReceiver()
        let fixture = try FixtureProcess(["idle"])
        let (process, _) = try startAgent(
            ["--pid", "\(fixture.pid)", "--report-dir", dir, "--duration", "1.5s"],
            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000"])
        // Read as systemd does, while the agent runs (its sends never block; a reader that
        // falls behind only loses pings).
        var messages: [String] = []
        while process.isRunning || messages.last?.contains("STOPPING=1") != true {
            guard let datagram = notify.receive(timeout: 3) else { break }
            messages.append(String(decoding: datagram, as: UTF8.self))
        }
        #expect(finish(process) == 0)
        #expect(messages.first?.contains("READY=1") == true, "\(messages)")
        #expect(messages.first?.contains("STATUS=watching stall-fixtures [\(fixture.pid)]") == true, "\(messages)")
        let pings = messages.filter { $0 == "WATCHDOG=1" }.count
        #expect(pings >= 4 && pings <= 10, "\(messages)")
        #expect(messages.last?.contains("STOPPING=1") == true)
    }

    /// A unit that is not there is waited for, logged once, and picked up when it appears.
    /// Where no cgroup hierarchy can be read, systemctl answers, without the notify socket and
    /// with no signal blocked.
    @Test func unitTargetIsWaitedForAndAttachedWhenItStarts() throws {
        let dir = try temporaryDirectory("unit")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // This machine has no running systemd; a stand-in systemctl answers `show` from a file
        // the test controls, in systemctl's own KEY=VALUE output format, and fails if it was
        // handed the agent's notify socket.
        let properties = dir + "/properties"
        try "LoadState=not-found\nActiveState=inactive\nMainPID=0\n".write(toFile: properties, atomically: true, encoding: .utf8)
        let systemctl = dir + "/systemctl"
        // It also fails if it started with signals blocked (the agent reads its own from a
        // signalfd and keeps them blocked; a child must not inherit that). Read with builtins
        // before any fork: the shell blocks signals of its own while it forks and waits.
        try
            "#!/bin/sh\n[ \"$1\" = show ] || exit 1\n[ -z \"$NOTIFY_SOCKET$WATCHDOG_USEC\" ] || { echo inherited; exit 1; }\nwhile read -r key value; do [ \"$key\" = SigBlk: ] && blocked=$value; done < /proc/$$/status\ncase $blocked in *[!0]*|'') echo \"blocked $blocked\" >&2; exit 1;; esac\ncat '\(properties)'\n"
            .write(toFile: systemctl, atomically: true, encoding: .utf8)
        chmod(systemctl, 0o755)
        let notify = try DatagramReceiver()
        let (process, stderrPath) = try startAgent(
            ["--unit", "demo", "--report-dir", dir + "/reports", "--retry-interval", "0.1s", "--duration", "60s"],
            environment: [
                "STALLAGENT_SYSTEMCTL": systemctl, "STALLAGENT_CGROUP_ROOT": dir + "/no-cgroup-hierarchy",
                "NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "10000000",
            ])
        #expect(waitForText(stderrPath, "unit demo.service not found"))
        let fixture = try FixtureProcess(["loop", "--script", "idle:0.5,spin:1.3", "--gap", "0.3"])
        try "LoadState=loaded\nActiveState=active\nMainPID=\(fixture.pid)\n".write(toFile: properties, atomically: true, encoding: .utf8)
        // Stopped once the stall is reported (SIGTERM finalises it), not at a fixed duration.
        #expect(waitForText(stderrPath, "0x8badf00d hang", timeout: 30))
        kill(process.processIdentifier, SIGTERM)
        #expect(finish(process) == 0)
        let stderr = try String(contentsOfFile: stderrPath, encoding: .utf8)
        #expect(stderr.components(separatedBy: "unit demo.service not found").count - 1 == 1, "\(stderr)")
        #expect(stderr.contains("[\(fixture.pid)]'s main thread (unit demo.service)"), "\(stderr)")
        #expect(stderr.contains("0x8badf00d hang"), "\(stderr)")
        #expect(!stderr.contains("inherited"), "\(stderr)")
        #expect(!stderr.contains("failed: blocked"), "\(stderr)")
        let reports = try FileManager.default.contentsOfDirectory(atPath: dir + "/reports/demo.service")
        #expect(reports.contains { $0.hasSuffix(".json") }, "\(reports)")
    }

    /// Without D-Bus: the unit's processes come from its cgroup, found by name in the tree, and
    /// the main one is the oldest whose parent is outside it. Bad input (no unit file, an empty
    /// cgroup) is one line per reason, and the agent keeps waiting.
    @Test func unitIsResolvedFromItsCgroup() throws {
        let dir = try temporaryDirectory("cgroup")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let root = dir + "/cgroup"
        let unitDir = root + "/system.slice/system-demo.slice/demo@x.service"
        try FileManager.default.createDirectory(atPath: root + "/system.slice/other.service", withIntermediateDirectories: true)
        let units = dir + "/units"
        try FileManager.default.createDirectory(atPath: units, withIntermediateDirectories: true)
        let (process, stderrPath) = try startAgent(
            ["--unit", "demo@x", "--report-dir", dir + "/reports", "--retry-interval", "0.1s", "--duration", "60s"],
            environment: ["STALLAGENT_CGROUP_ROOT": root, "SYSTEMD_UNIT_PATH": units, "STALLAGENT_SYSTEMCTL": "/bin/false"])
        #expect(waitForText(stderrPath, "unit demo@x.service not found"))
        // The template defines the instance; its cgroup exists but is empty (inactive).
        _ = FileManager.default.createFile(atPath: units + "/demo@.service", contents: Data())
        try FileManager.default.createDirectory(atPath: unitDir, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: unitDir + "/cgroup.procs", contents: Data())
        #expect(waitForText(stderrPath, "unit demo@x.service has no processes"))
        let fixture = try FixtureProcess(["loop", "--script", "idle:0.5,spin:1.3", "--gap", "0.3"])
        // A younger process whose parent is also outside the cgroup: not the main one.
        let helper = Process()
        helper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        helper.arguments = ["20"]
        try helper.run()
        defer {
            kill(helper.processIdentifier, SIGKILL)
            helper.waitUntilExit()
        }
        try "\(helper.processIdentifier)\n\(fixture.pid)\n".write(toFile: unitDir + "/cgroup.procs", atomically: true, encoding: .utf8)
        #expect(waitForText(stderrPath, "0x8badf00d hang", timeout: 30))
        kill(process.processIdentifier, SIGTERM)
        #expect(finish(process) == 0)
        let stderr = try String(contentsOfFile: stderrPath, encoding: .utf8)
        #expect(stderr.components(separatedBy: "unit demo@x.service not found").count - 1 == 1, "\(stderr)")
        #expect(stderr.components(separatedBy: "unit demo@x.service has no processes").count - 1 == 1, "\(stderr)")
        #expect(stderr.contains("[\(fixture.pid)]'s main thread (unit demo@x.service)"), "\(stderr)")
        #expect(stderr.contains("0x8badf00d hang"), "\(stderr)")
        let reports = try FileManager.default.contentsOfDirectory(atPath: dir + "/reports/demo@x.service")
        #expect(reports.contains { $0.hasSuffix(".json") }, "\(reports)")
    }

    /// Two agents on one process write two sets of reports, not one over the other.
    @Test func twoAgentsOnOneProcessKeepTheirOwnReports() throws {
        let dir = try temporaryDirectory("two")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fixture = try FixtureProcess(["loop", "--script", "idle:0.5,spin:1.3", "--gap", "0.3", "--exit-when-done"])
        let first = try startAgent(["--pid", "\(fixture.pid)", "--report-dir", dir])
        let second = try startAgent(["--pid", "\(fixture.pid)", "--report-dir", dir])
        #expect(finish(first.0) == 0)
        #expect(finish(second.0) == 0)
        let texts = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".txt") }
        #expect(texts.count == 2, "\(texts)")
    }

    /// `--pid A --pid B` watches both (it used to keep only B), each under its own name.
    @Test func repeatedPidWatchesEveryProcess() throws {
        let dir = try temporaryDirectory("pids")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try FixtureProcess(["loop", "--script", "idle:0.3,spin:1.3", "--gap", "0.3", "--exit-when-done"])
        let second = try FixtureProcess(["loop", "--script", "idle:0.3,spin:1.3", "--gap", "0.3", "--exit-when-done"])
        let result = try runCommand(
            agent,
            [
                "--pid", "\(first.pid)", "--pid", "\(second.pid)", "--report-dir", dir, "--metrics-file", dir + "/m.prom",
            ], timeout: 30)
        #expect(result.status == 0, "\(result.stderr)")
        for pid in [first.pid, second.pid] {
            #expect(result.stderr.contains("in stall-fixtures[\(pid)] detected"), "\(result.stderr)")
        }
        let metrics = try String(contentsOfFile: dir + "/m.prom", encoding: .utf8)
        #expect(metrics.contains(#"target="stall-fixtures-\#(second.pid)""#), "\(metrics)")
        let named = try runCommand(agent, ["--pid", "\(first.pid)", "--pid", "\(second.pid)", "--name", "x"])
        #expect(named.status == 64, "\(named.stderr)")
    }

    /// Occurrence counts and the per-fingerprint rate limit survive an agent restart.
    @Test func fingerprintStateSurvivesAgentRestarts() throws {
        let dir = try temporaryDirectory("state")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var outputs: [String] = []
        for _ in 0..<2 {
            let fixture = try FixtureProcess(["loop", "--script", "spin:1.3", "--gap", "0.3", "--exit-when-done"])
            let result = try runCommand(
                agent,
                [
                    "--pid", "\(fixture.pid)", "--report-dir", dir + "/reports", "--state-dir", dir + "/state",
                    "--min-report-interval", "1h", "--launch-threshold", "1s",
                ], timeout: 30)
            #expect(result.status == 0)
            outputs.append(result.stderr)
        }
        #expect(outputs[0].contains("→ "), "\(outputs[0])")
        // Same stack, second agent: counted as the 2nd occurrence and, within the hour, not re-reported.
        #expect(outputs[1].contains("seen before: 2×"), "\(outputs[1])")
        let reports = try FileManager.default.contentsOfDirectory(atPath: dir + "/reports").filter { $0.hasSuffix(".txt") }
        #expect(reports.count == 1, "\(reports)")
    }

    /// Old reports beyond the limits are removed; the new one stays.
    @Test func retentionKeepsTheDirectoryWithinLimits() throws {
        let dir = try temporaryDirectory("retention")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for i in 0..<8 {
            for ext in ["txt", "json"] {
                _ = FileManager.default.createFile(atPath: "\(dir)/old_\(i)_20200101-000000_hang_1.\(ext)", contents: Data(repeating: 65, count: 100))
            }
        }
        let fixture = try FixtureProcess(["loop", "--script", "spin:1.3", "--gap", "0.3", "--exit-when-done"])
        let result = try runCommand(agent, ["--pid", "\(fixture.pid)", "--report-dir", dir, "--max-reports", "3", "--launch-threshold", "1s"], timeout: 30)
        #expect(result.status == 0)
        // Reports only: the loop's health lines (`*.loop.jsonl`) are not reports.
        let stems = Set(
            try FileManager.default.contentsOfDirectory(atPath: dir).filter { !$0.hasPrefix(".") && !$0.hasSuffix(".loop.jsonl") }
                .map { $0.split(separator: ".")[0] })
        #expect(stems.count == 3, "\(stems)")
        #expect(stems.contains { $0.hasPrefix("stall-fixtures_") }, "\(stems)")
        #expect(result.stderr.contains("retention: removed"), "\(result.stderr)")
    }

    /// A full disk: the agent warns, keeps watching, leaves no temporary or partial files,
    /// and its summary says the report could not be written.
    @Test func aFullDiskIsSurvived() throws {
        let mountPoint = try tinyTmpfs("full", size: "16k")
        defer { removeTmpfs(mountPoint) }
        _ = FileManager.default.createFile(atPath: mountPoint + "/fill", contents: Data(repeating: 0, count: 12 * 1024))
        let fixture = try FixtureProcess(["loop", "--script", "spin:1.3", "--gap", "0.3", "--exit-when-done"])
        let result = try runCommand(
            agent,
            [
                "--pid", "\(fixture.pid)", "--report-dir", mountPoint + "/reports", "--metrics-file", mountPoint + "/m.prom",
                "--metrics-interval", "0.2s", "--launch-threshold", "1s",
            ], timeout: 30)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("No space left on device"), "\(result.stderr)")
        #expect(result.stderr.contains("0x8badf00d hang"))
        #expect(result.stderr.contains("report could not be written"), "\(result.stderr)")
        let leftovers =
            (try FileManager.default.contentsOfDirectory(atPath: mountPoint + "/reports"))
            + (try FileManager.default.contentsOfDirectory(atPath: mountPoint)).filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    /// The disk fills while a stall is on: its final revision cannot replace the "ongoing" one.
    /// It is kept and tried again, and once there is room the file on disk is the true report,
    /// not a stall that never ended (issue 27).
    @Test(.tags(.hostile)) func attack22_aFinalReportRefusedByAFullDiskIsWrittenOnceThereIsRoom() throws {
        let mountPoint = try tinyTmpfs("refill", size: "1m")
        defer { removeTmpfs(mountPoint) }
        let reports = mountPoint + "/reports"
        let fixture = try FixtureProcess(["loop", "--script", "spin:3", "--gap", "0.5"])
        let (process, stderrPath) = try startAgent([
            "--pid", "\(fixture.pid)", "--report-dir", reports, "--duration", "40s", "--launch-threshold", "1s",
        ])
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        func stderr() -> String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }
        func waitFor(_ what: String, seconds: Double) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if stderr().contains(what) { return true }
                usleep(50_000)
            }
            return false
        }
        #expect(waitFor("detected", seconds: 15), "\(stderr())")
        // The ongoing revision is on disk; then nothing more fits.
        let text = { (try? FileManager.default.contentsOfDirectory(atPath: reports))?.first { $0.hasSuffix(".txt") } }
        let deadline = Date().addingTimeInterval(5)
        while text() == nil, Date() < deadline { usleep(20_000) }
        let name = try #require(text(), "no ongoing report: \(stderr())")
        _ = try runCommand(URL(fileURLWithPath: "/bin/dd"), ["if=/dev/zero", "of=\(mountPoint)/fill", "bs=4k"])
        #expect(waitFor("could not write the final report for stall #1", seconds: 15), "\(stderr())")
        let stale = try String(contentsOfFile: reports + "/" + name, encoding: .utf8)
        #expect(stale.contains("ongoing"), "\(stale)")
        try FileManager.default.removeItem(atPath: mountPoint + "/fill")
        #expect(waitFor("final report written now that there is room", seconds: 15), "\(stderr())")
        kill(process.processIdentifier, SIGTERM)
        #expect(finish(process) == 0, "\(stderr())")
        let files = try FileManager.default.contentsOfDirectory(atPath: reports)
        let final = try files.filter { $0.hasSuffix(".txt") }.map { try String(contentsOfFile: reports + "/" + $0, encoding: .utf8) }
        #expect(final.count == 1, "\(files)")
        #expect(final.allSatisfy { $0.contains("(ended)") && !$0.contains("ongoing") }, "\(final)")
        #expect(!files.contains { $0.hasPrefix(".") }, "\(files)")
    }

    @Test func metricsAreServedOverHTTP() throws {
        let fixture = try FixtureProcess(["idle"])
        let dir = try temporaryDirectory("listen")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Port 0: the kernel picks a free one; the test reads which from the agent's socket.
        let (process, stderrPath) = try startAgent([
            "--pid", "\(fixture.pid)", "--report-dir", dir, "--metrics-listen", "127.0.0.1:0", "--duration", "60s",
        ])
        let port = try #require(KernelState.listeningPort(of: process.processIdentifier), "the agent never listened")
        // Scraped until the target is attached (the listener is up from the start).
        var curl = CommandResult(status: -1, stdout: "", stderr: "")
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, !curl.stdout.contains(#"stallagent_target_up{target="stall-fixtures"} 1"#) {
            curl = try runCommand(URL(fileURLWithPath: "/usr/bin/curl"), ["-sS", "-i", "http://127.0.0.1:\(port)/metrics"])
            if !curl.stdout.contains(#"stallagent_target_up{target="stall-fixtures"} 1"#) { usleep(50_000) }
        }
        let missing = try runCommand(URL(fileURLWithPath: "/usr/bin/curl"), ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/nope"])
        // A second agent on the same port: a clear error and its exit code, at start.
        let clash = try runCommand(agent, ["--pid", "\(fixture.pid)", "--report-dir", dir, "--metrics-listen", "127.0.0.1:\(port)", "--duration", "1s"])
        // Stopped once the clash is seen (SIGTERM: a clean exit 0).
        kill(process.processIdentifier, SIGTERM)
        #expect(finish(process) == 0, "\(String(describing: try? String(contentsOfFile: stderrPath, encoding: .utf8)))")
        #expect(curl.stdout.hasPrefix("HTTP/1.1 200 OK"), "\(curl)")
        #expect(curl.stdout.contains("text/plain; version=0.0.4"))
        #expect(curl.stdout.contains(#"stallagent_target_up{target="stall-fixtures"} 1"#), "\(curl.stdout)")
        #expect(missing.stdout == "404")
        #expect(clash.status == 69, "\(clash)")
        #expect(clash.stderr.contains("Address already in use"), "\(clash.stderr)")
    }

    @Test func badConfigurationFilesAreRefusedWithTheirLine() throws {
        let dir = try temporaryDirectory("config")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/stallagent.yaml"
        try "threshold: 1s\ntargets:\n  - unit: nginx\n    thresold: 2s\n".write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runCommand(agent, ["--config", path])
        #expect(result.status == 78)
        #expect(result.stderr.contains("\(path):4: unknown target setting 'thresold'"), "\(result.stderr)")
        let both = try runCommand(agent, ["--config", path, "--pid", "1"])
        #expect(both.status == 64)
        let none = try runCommand(agent, ["--threshold", "1s"])
        #expect(none.status == 64)
        #expect(none.stderr.contains("nothing to watch"))
    }

    /// Least privilege: an unprivileged user holding CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH
    /// (what the units grant) watches a root process. CAP_SYS_PTRACE alone is not enough —
    /// /proc/PID/syscall is 0400 and owned by the target's user — and the error says so.
    @Test func unprivilegedUserWithPtraceCapabilitiesWorks() throws {
        guard getuid() == 0 else { try Test.cancel("needs root to drop to an unprivileged user") }
        let dir = try temporaryDirectory("caps")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        chown(dir, 65534, 65534)
        let fixture = try FixtureProcess(["loop", "--script", "spin:1.3", "--gap", "0.3", "--exit-when-done"])
        let setpriv = URL(fileURLWithPath: "/usr/bin/setpriv")
        func dropped(_ caps: String) -> [String] {
            [
                "--reuid=65534", "--regid=65534", "--clear-groups", "--no-new-privs", "--inh-caps=-all\(caps)",
                "--ambient-caps=-all\(caps)", "--bounding-set=-all\(caps)",
            ]
        }
        let withCaps = try runCommand(
            setpriv,
            dropped(",+sys_ptrace,+dac_read_search") + [
                agent.path, "--pid", "\(fixture.pid)", "--report-dir", dir + "/reports", "--launch-threshold", "1s",
            ], timeout: 30)
        #expect(withCaps.status == 0, "\(withCaps.stderr)")
        #expect(withCaps.stderr.contains("0x8badf00d hang"), "\(withCaps.stderr)")
        #expect(withCaps.stderr.contains("busy_compute"), "\(withCaps.stderr)")
        let target = try FixtureProcess(["idle"])
        for caps in [",+sys_ptrace", ""] {
            let refused = try runCommand(setpriv, dropped(caps) + [agent.path, "--pid", "\(target.pid)", "--report-dir", dir + "/reports2"])
            #expect(refused.status == 4, "\(refused.stderr)")
            #expect(refused.stderr.contains("CAP_DAC_READ_SEARCH"))
        }
        #expect(target.procStatus?.tracer == 0)
    }

    /// Under systemd a missing capability is the unit's setting to fix: the agent exits naming
    /// it, rather than waiting forever with advice for a terminal.
    @Test func missingCapabilityUnderSystemdExitsNamingTheUnitSetting() throws {
        guard getuid() == 0 else { try Test.cancel("needs root to drop to an unprivileged user") }
        let dir = try temporaryDirectory("unitcaps")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        chown(dir, 65534, 65534)
        let target = try FixtureProcess(["idle"])
        let unitDir = dir + "/cgroup/system.slice/demo.service"
        try FileManager.default.createDirectory(atPath: unitDir, withIntermediateDirectories: true)
        try "\(target.pid)\n".write(toFile: unitDir + "/cgroup.procs", atomically: true, encoding: .utf8)
        let (process, stderrPath) = try startAgent(
            [
                "--reuid=65534", "--regid=65534", "--clear-groups", "--no-new-privs",
                "--inh-caps=-all,+sys_ptrace", "--ambient-caps=-all,+sys_ptrace", "--bounding-set=-all,+sys_ptrace",
                agent.path, "--unit", "demo", "--report-dir", dir + "/reports", "--retry-interval", "0.1s", "--duration", "20s",
            ],
            environment: ["INVOCATION_ID": "5c1d0e7f2a8b4c3d9e6f1a2b3c4d5e6f", "STALLAGENT_CGROUP_ROOT": dir + "/cgroup"],
            executable: URL(fileURLWithPath: "/usr/bin/setpriv"))
        #expect(finish(process, timeout: 10) == 4)
        let stderr = try String(contentsOfFile: stderrPath, encoding: .utf8)
        #expect(stderr.contains("without CAP_DAC_READ_SEARCH"), "\(stderr)")
        #expect(stderr.contains("AmbientCapabilities= and CapabilityBoundingSet="), "\(stderr)")
        #expect(!stderr.contains("setcap") && !stderr.contains("waiting for it"), "\(stderr)")
        #expect(target.procStatus?.tracer == 0)
    }
}
