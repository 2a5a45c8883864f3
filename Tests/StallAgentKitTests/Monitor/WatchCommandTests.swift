import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `stallagent --pid` as a user runs it: lifecycle, signals and bad input.
@Suite(.serialized, .tags(.timed)) struct WatchCommandTests {
    let agent = FixtureProcess.stallagentURL

    func reportDir() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("watch-\(UUID().uuidString)").path
    }

    @Test func badDurationsAndDirectoriesAreRefusedAtStart() throws {
        let fixture = try FixtureProcess(["idle"])
        let bad = try runCommand(agent, ["--pid", "\(fixture.pid)", "--threshold", "soon"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("not a duration"))
        #expect(try runCommand(agent, ["--pid", "\(fixture.pid)", "--kill-after", "-1s"]).status == 64)
        // Values that used to crash the agent or stop a blocked thread: clean usage errors.
        for arguments in [
            ["--max-stack=-1"], ["--max-stack", "0"], ["--probe-interval", "1e300s"],
            ["--threshold=-1s"], ["--loop-turns", "sometimes"],
        ] {
            let refused = try runCommand(agent, ["--pid", "\(fixture.pid)", "--duration", "1s"] + arguments)
            #expect(refused.status == 64, "\(arguments): \(refused.stderr)")
            #expect(refused.stderr.contains("Error: --"), "\(arguments): \(refused.stderr)")
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-dir-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
        defer { unlink(file) }
        let notDir = try runCommand(agent, ["--pid", "\(fixture.pid)", "--report-dir", file, "--duration", "1s"])
        #expect(notDir.status == 73, "\(notDir.stderr)")
        let link = FileManager.default.temporaryDirectory.appendingPathComponent("link-\(UUID().uuidString)").path
        symlink("/tmp", link)
        defer { unlink(link) }
        let symlinked = try runCommand(agent, ["--pid", "\(fixture.pid)", "--report-dir", link, "--duration", "1s"])
        #expect(symlinked.status == 73, "\(symlinked.stderr)")
        #expect(try runCommand(agent, ["--pid", "999999999"]).status == 3)
    }

    /// SIGTERM mid-stall: the open report is finalised, the agent exits 0, the target runs on.
    @Test func sigtermFinalisesOpenReports() throws {
        let fixture = try FixtureProcess(["loop", "--script", "spin:30", "--gap", "0.3"])
        let dir = reportDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let process = Process()
        process.executableURL = agent
        process.arguments = ["--pid", "\(fixture.pid)", "--report-dir", dir]
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The report is written, marked ongoing, once the stall passes its threshold (the
        // launch threshold if the agent attached after the fixture's idle start).
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, (try? FileManager.default.contentsOfDirectory(atPath: dir))?.contains(where: { $0.hasSuffix(".json") }) != true {
            usleep(20_000)
        }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let json = try #require(try FileManager.default.contentsOfDirectory(atPath: dir).first { $0.hasSuffix(".json") })
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/" + json))) as? [String: Any]
        #expect(object?["ongoing"] as? Bool == false)
        #expect(object?["ending"] as? String == "monitoringStopped")
        // A spin on a loaded machine (load above the core count) waits on the run queue longer
        // than it runs: starved, rightly.
        let code = (object?["reason"] as? [String: Any])?["code"] as? String
        #expect(code == "0x8badf00d" || code == "0xc00010ff", "\(code ?? "nil")")
        #expect(fixture.process.isRunning)
        #expect(fixture.procStatus?.tracer == 0)
    }

    /// The agent killed with SIGKILL while sampling a busy target: the kernel detaches it and
    /// the target keeps running — never left stopped.
    @Test func agentKilledMidSamplingLeavesTargetRunning() throws {
        let fixture = try FixtureProcess(["loop", "--script", "spin:30", "--gap", "0.3"])
        // Killed at five points after it attached (sampling from its first probe: the target
        // is busy), before and after its first report (at the 1 s threshold).
        for delay: UInt32 in [200_000, 500_000, 800_000, 1_100_000, 1_400_000] {
            let stderrPath = reportDir() + ".err"
            _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
            defer { unlink(stderrPath) }
            let process = Process()
            process.executableURL = agent
            process.arguments = ["--pid", "\(fixture.pid)", "--report-dir", reportDir(), "--sample-interval", "5ms"]
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
            try process.run()
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline, (try? String(contentsOfFile: stderrPath, encoding: .utf8))?.contains("watching") != true {
                usleep(10_000)
            }
            try #require((try? String(contentsOfFile: stderrPath, encoding: .utf8))?.contains("watching") == true, "the agent never attached")
            usleep(delay)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            usleep(50_000)
            let status = fixture.procStatus
            #expect(status?.tracer == 0)
            #expect(status?.state == "R", "target state \(String(describing: status?.state))")
        }
    }

    @Test func targetExitEndsTheWatchWithZero() throws {
        let fixture = try FixtureProcess(["loop", "--script", "spin:1.3", "--gap", "0.3", "--exit-when-done"])
        let dir = reportDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try runCommand(agent, ["--pid", "\(fixture.pid)", "--report-dir", dir, "--launch-threshold", "1s"], timeout: 30)
        #expect(result.status == 0)
        #expect(result.stderr.contains("1 stall"))
        #expect(result.stderr.contains("0x8badf00d"))
        #expect(result.stderr.contains("busy_compute"))
    }
}
