import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The `stallagent dump` command as a user types it: output and documented exit codes.
@Suite(.serialized, .tags(.laneOne)) struct DumpCommandTests {
    let agent = FixtureProcess.stallagentURL

    @Test func textDumpOfSpinningProcess() throws {
        let fixture = try FixtureProcess(["spin"])
        try #require(KernelState.waitUntilSpinning(fixture.pid), "the fixture never ran its loop")
        let result = try runCommand(agent, ["dump", "--pid", "\(fixture.pid)"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("Process:         stall-fixtures [\(fixture.pid)]"))
        #expect(result.stdout.contains("spin_hot_loop + "))
        #expect(result.stdout.contains("captured with a ptrace stop"))
    }

    @Test func jsonDumpHasFrameFields() throws {
        let fixture = try FixtureProcess(["sleep"])
        try #require(KernelState.waitUntilBlocked(fixture.pid, in: [35, 230]), "never in nanosleep")
        let result = try runCommand(agent, ["dump", "--pid", "\(fixture.pid)", "--json"])
        #expect(result.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let threads = try #require(object?["threads"] as? [[String: Any]])
        let frames = try #require(threads.first?["frames"] as? [[String: Any]])
        let named = try #require(frames.first { $0["function"] as? String == "sleep_forever" })
        for key in ["address", "module", "buildId", "moduleOffset", "function", "functionOffset"] {
            #expect(named[key] != nil, "missing \(key)")
        }
        #expect((named["address"] as? String)?.hasPrefix("0x") == true)
        #expect(threads.first?["activity"] as? String == "blockedCall")
    }

    @Test func badInputsGiveDocumentedExitCodes() throws {
        #expect(try runCommand(agent, ["dump"]).status == 64)
        #expect(try runCommand(agent, ["dump", "--pid", "abc"]).status == 64)
        let missing = try runCommand(agent, ["dump", "--pid", "999999999"])
        #expect(missing.status == 3)
        #expect(missing.stderr.contains("no process with pid 999999999"))
        let kernel = try runCommand(agent, ["dump", "--pid", "2"])
        #expect(kernel.status == 5)
        #expect(kernel.stderr.contains("kernel thread"))
    }

    @Test func zombieIsRefused() throws {
        let fixture = try FixtureProcess(["zombie-parent"])
        // Printed once waitid(WNOWAIT) has seen the child exit: a zombie from here on.
        let zombie = try #require(fixture.fields["zombie"])
        let result = try runCommand(agent, ["dump", "--pid", zombie])
        #expect(result.status == 5)
        #expect(result.stderr.contains("zombie"))
    }

    @Test func unprivilegedUserIsToldHowToFixIt() throws {
        guard getuid() == 0 else { try Test.cancel("needs root to switch to nobody") }
        let fixture = try FixtureProcess(["spin"])
        // Copy the binary somewhere nobody can execute it from.
        let copy = URL(fileURLWithPath: "/tmp/stallagent-test-\(getpid())")
        try? FileManager.default.removeItem(at: copy)
        try FileManager.default.copyItem(at: agent, to: copy)
        defer { try? FileManager.default.removeItem(at: copy) }
        chmod(copy.path, 0o755)
        let result = try runCommand(
            URL(fileURLWithPath: "/usr/sbin/runuser"), ["-u", "nobody", "--", copy.path, "dump", "--pid", "\(fixture.pid)"])
        #expect(result.status == 4)
        #expect(result.stderr.contains("CAP_SYS_PTRACE"))
    }

    @Test func alreadyTracedProcessIsRefusedAndLeftAlone() throws {
        let fixture = try FixtureProcess(["spin"])
        // Seize it from another process: a child tracer that holds it for a while.
        let tracer = Process()
        tracer.executableURL = URL(fileURLWithPath: "/usr/bin/gdb")
        guard FileManager.default.isExecutableFile(atPath: tracer.executableURL!.path) else { try Test.cancel("gdb is not installed") }
        tracer.arguments = ["-q", "-batch", "-p", "\(fixture.pid)", "-ex", "shell sleep 3"]
        tracer.standardOutput = FileHandle.nullDevice
        tracer.standardError = FileHandle.nullDevice
        try tracer.run()
        defer {
            tracer.waitUntilExit()
        }
        var traced = false
        for _ in 0..<200 where !traced {
            usleep(10_000)
            traced = (fixture.procStatus?.tracer ?? 0) != 0
        }
        guard traced else { try Test.cancel("gdb did not attach within 2 s (ptrace restricted?)") }
        let result = try runCommand(agent, ["dump", "--pid", "\(fixture.pid)"])
        // gdb stops the process, so the main thread is read without a stop; either way the
        // dump must not fail with a crash or hang.
        #expect([0, 5].contains(result.status), "\(result.stderr)")
    }
}
