import Foundation
import Testing

@testable import StallDetection
@testable import StallProc
@testable import StallReports
@testable import StallMonitoring

#if canImport(Glibc)
import Glibc
#endif

/// Dumps every fixture mode under real ptrace and checks the stack, the state, and that the
/// target is left running and untraced.
@Suite(.serialized, .tags(.timed)) struct DumpIntegrationTests {
    func functions(_ dump: ThreadDump) -> [String] { dump.frames.compactMap(\.function) }

    /// The expected names appear in this order (innermost first), not necessarily adjacent.
    func expectInOrder(_ names: [String], in dump: ThreadDump, sourceLocation: SourceLocation = #_sourceLocation) {
        expectSubsequence(names, of: functions(dump), sourceLocation: sourceLocation)
    }

    func expectUntouched(_ fixture: FixtureProcess, sourceLocation: SourceLocation = #_sourceLocation) {
        let status = fixture.procStatus
        #expect(status?.tracer == 0, "target still traced", sourceLocation: sourceLocation)
        #expect(status?.state != "t" && status?.state != "T", "target left stopped", sourceLocation: sourceLocation)
    }

    @Test func runningThreadIsStoppedBrieflyAndUnwound() throws {
        let fixture = try FixtureProcess(["spin"])
        try #require(KernelState.waitUntilSpinning(fixture.pid), "the fixture never ran its loop")
        let inspector = try ProcessInspector(pid: fixture.pid)
        let dump = try inspector.dump(tid: fixture.pid)
        #expect(dump.activity == .running)
        #expect(dump.captureMethod == .ptraceStop)
        expectInOrder(["spin_hot_loop", "spin_outer", "run_spin", "main"], in: dump)
        #expect(dump.frames.first?.function == "spin_hot_loop")
        #expect(dump.frames.allSatisfy { $0.buildId != nil && $0.moduleOffset != nil })
        expectUntouched(fixture)
    }

    @Test func deepRecursionIsUnwoundCompletely() throws {
        let fixture = try FixtureProcess(["deep", "120"])
        let inspector = try ProcessInspector(pid: fixture.pid)
        // The fixture prints "ready" just before it recurses: a dump in that instant finds the
        // tail of write(2). Wait until it is on CPU in the recursion.
        var dump = try inspector.dump(tid: fixture.pid)
        for _ in 0..<50 where dump.frames.first?.function != "deep_leaf_spin" {
            usleep(10_000)
            dump = try inspector.dump(tid: fixture.pid)
        }
        let names = functions(dump)
        #expect(names.first == "deep_leaf_spin")
        #expect(names.filter { $0 == "recurse_deep" }.count >= 120)
        expectInOrder(["deep_leaf_spin", "recurse_deep", "run_deep", "main"], in: dump)
        #expect(dump.unwindEnd == .complete)
        // Recursion: each activation has its own stack address.
        let recursion = dump.frames.filter { $0.function == "recurse_deep" }
        #expect(Set(recursion.map(\.stackPointer)).count == recursion.count)
        expectUntouched(fixture)
    }

    @Test func blockedThreadsAreCapturedWithoutStopping() throws {
        // With the system calls each waits in: nanosleep/clock_nanosleep, read, epoll_wait/epoll_pwait.
        let cases: [(args: [String], activity: ThreadActivity, names: [String], syscalls: Set<Int>)] = [
            (["sleep"], .blockedCall, ["sleep_forever", "run_sleep", "main"], [35, 230]),
            (["pipe"], .blockedCall, ["read_from_pipe", "run_pipe", "main"], [0]),
            (["idle"], .idle, ["idle_wait_loop", "run_idle", "main"], [232, 281, 441]),
        ]
        for testCase in cases {
            let fixture = try FixtureProcess(testCase.args)
            try #require(KernelState.waitUntilBlocked(fixture.pid, in: testCase.syscalls), "\(testCase.args): never in its wait")
            let inspector = try ProcessInspector(pid: fixture.pid)
            let dump = try inspector.dump(tid: fixture.pid)
            #expect(dump.activity == testCase.activity, "\(testCase.args)")
            #expect(dump.captureMethod == .withoutStop, "\(testCase.args)")
            expectInOrder(testCase.names, in: dump)
            expectUntouched(fixture)
        }
    }

    @Test func mutexWaitNamesTheOwner() throws {
        let fixture = try FixtureProcess(["mutex"])
        try #require(KernelState.waitUntilBlocked(fixture.pid, in: [202]), "never in futex")
        let holder = try #require(fixture.fields["holder_tid"].flatMap { Int32($0) })
        let inspector = try ProcessInspector(pid: fixture.pid)
        let dump = try inspector.dump(tid: fixture.pid)
        #expect(dump.activity == .lockWait)
        #expect(dump.lockOwner?.tid == holder)
        #expect(dump.lockOwner?.name == "holder")
        expectInOrder(["wait_for_lock", "run_mutex", "main"], in: dump)
        let all = try inspector.dumpProcess(allThreads: true)
        let holderDump = try #require(all.threads.first { $0.tid == holder })
        expectInOrder(["hold_lock_forever"], in: holderDump)
    }

    /// 100 dumps of an idle event loop: never a ptrace stop, never an EINTR in the target.
    @Test func idleTargetSeesNoEINTR() throws {
        let fixture = try FixtureProcess(["idle"])
        try #require(KernelState.waitUntilBlocked(fixture.pid, in: [232, 281, 441]), "never in epoll_wait")
        let inspector = try ProcessInspector(pid: fixture.pid)
        for _ in 0..<100 {
            let dump = try inspector.dump(tid: fixture.pid)
            #expect(dump.captureMethod == .withoutStop)
        }
        fixture.signal(SIGUSR1)
        let line = try fixture.waitForLine(prefix: "eintr=")
        #expect(line.hasPrefix("eintr=0 "), "target saw EINTR: \(line)")
    }

    /// A busy target keeps making progress across repeated captures.
    @Test func busyTargetKeepsRunning() throws {
        let gaps = FileManager.default.temporaryDirectory.appendingPathComponent("gaps-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: gaps) }
        let fixture = try FixtureProcess(["spin-timed", "--gaps", gaps.path])
        let inspector = try ProcessInspector(pid: fixture.pid)
        var stops = 0
        for _ in 0..<50 {
            let dump = try inspector.dump(tid: fixture.pid)
            if dump.captureMethod == .ptraceStop { stops += 1 }
            #expect(functions(dump).contains("timed_hot_loop"))
        }
        // Mostly stopped captures; one caught in a page fault is read without a stop, validly.
        #expect(stops >= 40)
        expectUntouched(fixture)
        fixture.signal(SIGTERM)
        #expect(fixture.waitForExit(timeout: 10))
        let text = try String(contentsOf: gaps, encoding: .utf8)
        let header = text.split(separator: "\n").first.map(String.init) ?? ""
        let iterations =
            header.split(separator: " ").first { $0.hasPrefix("iterations=") }
            .flatMap { UInt64($0.dropFirst("iterations=".count)) } ?? 0
        #expect(iterations > 1000, "target made no progress: \(header)")
    }

    @Test func allThreadsAreNamed() throws {
        let fixture = try FixtureProcess(["threads", "3"])
        // "ready" comes once every worker is named and asleep (the fixture checks their syscalls).
        let inspector = try ProcessInspector(pid: fixture.pid)
        let dump = try inspector.dumpProcess(allThreads: true)
        #expect(dump.threads.count == 4)
        #expect(dump.threads.first?.tid == fixture.pid)
        #expect(Set(dump.threads.dropFirst().map(\.name)) == ["worker-0", "worker-1", "worker-2"])
        for thread in dump.threads.dropFirst() {
            expectInOrder(["worker_sleep"], in: thread)
        }
    }

    /// A process that exits while being captured: an error or a dump, never a hang or crash.
    @Test func processExitingMidCaptureIsHandled() throws {
        for _ in 0..<5 {
            let fixture = try FixtureProcess(["exit-soon", "30"])
            let inspector = try? ProcessInspector(pid: fixture.pid)
            let start = Date()
            while fixture.process.isRunning && Date().timeIntervalSince(start) < 5 {
                do {
                    _ = try inspector?.dumpProcess(allThreads: true)
                } catch let error as StallAgentError {
                    #expect([3, 5].contains(error.exitCode), "\(error)")
                    break
                }
            }
            #expect(fixture.waitForExit(timeout: 5))
        }
    }

    @Test func execMidCaptureIsHandled() throws {
        let fixture = try FixtureProcess(["exec-soon", "100"])
        let inspector = try ProcessInspector(pid: fixture.pid)
        let start = Date()
        var sawSpinAfterExec = false
        while Date().timeIntervalSince(start) < 3 && !sawSpinAfterExec {
            if let dump = try? inspector.dump(tid: fixture.pid) {
                if dump.frames.contains(where: { $0.function == "spin_hot_loop" }) { sawSpinAfterExec = true }
            }
            _ = try? inspector.refreshModules()
        }
        #expect(sawSpinAfterExec)
        expectUntouched(fixture)
    }
}
