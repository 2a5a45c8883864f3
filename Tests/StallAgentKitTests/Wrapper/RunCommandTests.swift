import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `stallagent [options] -- COMMAND` as a CI job uses it: exit statuses, signals,
/// descendants, policies.
@Suite(.serialized) struct RunCommandTests {
    let agent = FixtureProcess.stallagentURL
    let fixtures = FixtureProcess.executableURL.path

    func reportDir() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("run-\(UUID().uuidString)").path
    }

    func run(_ arguments: [String], timeout: Double = 60) throws -> (CommandResult, String) {
        let dir = reportDir()
        return (try runCommand(agent, ["--report-dir", dir] + arguments, timeout: timeout), dir)
    }

    @Test func exitStatusIsPassedThrough() throws {
        #expect(try run(["--", "/bin/true"]).0.status == 0)
        #expect(try run(["--", "/bin/sh", "-c", "exit 3"]).0.status == 3)
        #expect(try run(["--", "/bin/sh", "-c", "kill -TERM $$"]).0.status == 128 + SIGTERM)
        #expect(try run(["--", "/bin/sh", "-c", "kill -KILL $$"]).0.status == 128 + SIGKILL)
        #expect(try runCommand(agent, ["run", "--", "/bin/sh", "-c", "exit 7"]).status == 7)
    }

    /// Every wrapped run ends with one line that says the agent ran and what it saw, a clean
    /// run too; `--quiet` leaves it out; `--version` names the version and the binary's build.
    @Test func aWrappedRunAlwaysEndsWithASummaryLine() throws {
        let (clean, _) = try run(["--", "/bin/sh", "-c", "sleep 0.3 & wait"])
        #expect(clean.status == 0)
        let lines = clean.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(clean.stderr)")
        let line = String(lines.last ?? "")
        #expect(line.hasPrefix("stallagent: 0 stalls over "), "\(line)")
        #expect(line.contains(" s of sh"), "\(line)")
        #expect(line.contains("; agent ") && line.hasSuffix(" % CPU"), "\(line)")
        let (failed, _) = try run(["--", "/bin/sh", "-c", "exit 3"])
        #expect(failed.status == 3 && failed.stderr.hasPrefix("stallagent: 0 stalls over "), "\(failed.stderr)")
        let (quiet, _) = try run(["--quiet", "--", "/bin/true"])
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
        let version = try runCommand(agent, ["--version"])
        #expect(version.status == 0)
        #expect(version.stdout.hasPrefix("stallagent "), "\(version.stdout)")
        #expect(version.stdout.contains("build-id ") && !version.stdout.contains("unknown"), "\(version.stdout)")
    }

    @Test func agentErrorsAreDistinguishable() throws {
        let notFound = try run(["--", "no-such-command-\(getpid())"]).0
        #expect(notFound.status == 127)
        #expect(notFound.stderr.contains("command not found"))
        #expect(try run(["--", "/etc/passwd"]).0.status == 126)
        #expect(try run(["--"]).0.status == 125)
        #expect(try run(["--threshold", "soon", "--", "/bin/true"]).0.status == 125)
        #expect(try run(["--on-stall", "maybe", "--", "/bin/true"]).0.status == 125)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("rf-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: file, contents: Data())
        defer { unlink(file) }
        #expect(try runCommand(agent, ["--report-dir", file, "--", "/bin/true"]).status == 125)
    }

    /// Signals sent to the agent reach the command; the agent itself keeps running until the
    /// command exits, and then exits with its status.
    @Test func signalsAreForwarded() throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("sig-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        defer { unlink(out.path) }
        let process = Process()
        process.executableURL = agent
        process.arguments = ["--report-dir", reportDir(), "--", fixtures, "idle"]
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = FileHandle.nullDevice
        try process.run()
        func waitFor(_ text: String) -> Bool {
            for _ in 0..<500 {
                if ((try? String(contentsOf: out, encoding: .utf8)) ?? "").contains(text) { return true }
                usleep(10_000)
            }
            return false
        }
        #expect(waitFor("ready"))
        kill(process.processIdentifier, SIGUSR1)
        #expect(waitFor("eintr="), "SIGUSR1 was not forwarded")
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0, "the idle fixture exits 0 on a forwarded SIGTERM")
    }

    @Test func commandIgnoringSIGTERMIsWaitedFor() throws {
        let process = Process()
        process.executableURL = agent
        process.arguments = ["--report-dir", reportDir(), "--", "/bin/sh", "-c", "trap '' TERM; sleep 1.5; exit 5"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        usleep(400_000)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 5)
    }

    /// A script that starts a server in the background: the server's stalls are reported
    /// (it is a descendant); the busy script itself, which never idles, is not noise.
    /// The server idles 1 s before its stall: wrapped commands have no launch threshold, so
    /// the agent must see it idle once, and on a loaded machine it may attach late.
    @Test func descendantsAreWatchedAndBusyRunnersAreQuiet() throws {
        let script = """
            \(fixtures) loop --script spin:1.3 --gap 1.0 --exit-when-done >/dev/null &
            server=$!
            i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done
            wait $server
            """
        let (result, dir) = try run(["--", "/bin/sh", "-c", script])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(result.status == 0)
        #expect(result.stderr.contains("busy_compute"), "\(result.stderr)")
        let reports = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        #expect(reports.filter { $0.hasSuffix(".json") }.count == 1, "\(reports)")
        #expect(reports.allSatisfy { $0.hasPrefix("stall-fixtures_") })
    }

    /// An orphan left behind by the command does not hold the run: the agent exits with the
    /// command. (Timed inside a shell: Foundation's Process also waits for the orphan, which
    /// inherited the agent's file descriptors.)
    @Test func orphansDoNotHoldTheRun() throws {
        let script = """
            start=$(date +%s%N)
            '\(agent.path)' --report-dir '\(reportDir())' -- /bin/sh -c 'sleep 3 >/dev/null 2>&1 & exit 4'
            status=$?
            end=$(date +%s%N)
            echo "status=$status ms=$(( (end - start) / 1000000 ))"
            """
        let result = try runCommand(URL(fileURLWithPath: "/bin/sh"), ["-c", script], timeout: 30)
        let line = result.stdout.split(separator: "\n").first { $0.hasPrefix("status=") } ?? ""
        #expect(line.hasPrefix("status=4 "), "\(result.stdout) \(result.stderr)")
        let ms = Int(line.split(separator: "=").last ?? "") ?? 99999
        #expect(ms < 2000, "agent waited for the orphan: \(ms) ms")
    }

    @Test func onStallFailTurnsSuccessInto86() throws {
        let arguments = ["--", fixtures, "loop", "--script", "spin:1.2", "--gap", "0.3", "--exit-when-done"]
        #expect(try run(arguments).0.status == 0)
        #expect(try run(["--on-stall", "fail"] + arguments).0.status == 86)
    }

    @Test func killAfterEndsAHungCommandWith124AndAReport() throws {
        let (result, dir) = try run(["--kill-after", "1.2s", "--", fixtures, "loop", "--script", "spin:60", "--gap", "0.3"])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(result.status == 124)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir)
        #expect(files.filter { $0.hasSuffix(".txt") }.count == 1, "stale revisions left: \(files)")
        let text = try #require(files.first { $0.hasSuffix(".txt") })
        let report = try String(contentsOfFile: dir + "/" + text, encoding: .utf8)
        #expect(report.contains("SIGABRT"))
        #expect(report.contains("busy_compute"))
    }

    @Test func timeoutLeavesSnapshotsAndExits124() throws {
        let (result, dir) = try run(["--timeout", "1.5s", "--", fixtures, "sleep"])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(result.status == 124)
        let json = try #require(try FileManager.default.contentsOfDirectory(atPath: dir).first { $0.contains("snapshot") && $0.hasSuffix(".json") })
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/" + json))) as? [String: Any]
        #expect((object?["reason"] as? [String: Any])?["code"] as? String == "0xbaaaaaad")
        #expect(object?["kind"] as? String == "snapshot")
        let text = try String(contentsOfFile: dir + "/" + json.replacingOccurrences(of: ".json", with: ".txt"), encoding: .utf8)
        #expect(text.contains("sleep_forever"))
    }

    /// --follow narrows the watched descendants by name.
    @Test(.tags(.timed)) func followNarrowsDescendantsByName() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("follow-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let other = dir.appendingPathComponent("other-server")
        try FileManager.default.copyItem(at: FixtureProcess.executableURL, to: other)
        let script = """
            \(fixtures) loop --script spin:1.2 --gap 1.0 --exit-when-done >/dev/null &
            '\(other.path)' loop --script spin:1.2 --gap 1.0 --exit-when-done >/dev/null &
            wait
            """
        let reports = dir.appendingPathComponent("reports").path
        let result = try runCommand(agent, ["--report-dir", reports, "--follow", "stall-fix", "--", "/bin/sh", "-c", script])
        #expect(result.status == 0)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: reports)) ?? []
        #expect(files.filter { $0.hasSuffix(".json") }.count == 1, "\(files)")
        #expect(files.allSatisfy { $0.hasPrefix("stall-fixtures_") })
        // Without --follow both servers are watched.
        let all = dir.appendingPathComponent("all").path
        #expect(try runCommand(agent, ["--report-dir", all, "--", "/bin/sh", "-c", script]).status == 0)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: all)) ?? []).filter { $0.hasSuffix(".json") }.count == 2)
    }

    /// A command that closes its stdout, and an agent whose stdout is closed: no effect on
    /// the run's status.
    @Test func closedStdoutIsHarmless() throws {
        #expect(try run(["--", "/bin/sh", "-c", "exec >&-; exec 2>&-; exit 0"]).0.status == 0)
        let closed = try runCommand(
            URL(fileURLWithPath: "/bin/sh"), ["-c", "'\(agent.path)' --report-dir /tmp/closed-\(getpid()) -- /bin/sh -c 'exit 9' >&-; echo status=$?"])
        #expect(closed.stdout.contains("status=9"), "\(closed.stdout) \(closed.stderr)")
    }
}
