import Foundation
import Testing

@testable import StallProc
@testable import StallMonitoring

#if canImport(Glibc)
import Glibc
#endif

/// Loop turns against real event loops under real ptrace (issue 10): a saturated loop that
/// never sleeps is not a stall, one slow turn inside it is, a wait nested inside work is a
/// blocked call, and a process parked in sigsuspend is idle — with the kernel counters and
/// with the stack rule.
@Suite(.serialized, .tags(.timed)) struct LoopTurnIntegrationTests {
    static let modes: [LoopTurnMode] = [.auto, .stackRule]

    /// `waitsInALoop`: the thread idles in a loop's wait (epoll_wait) or stays busy past half a
    /// threshold, so `auto` ends up on the kernel counters; a thread only ever idle elsewhere
    /// (sigsuspend) keeps the stack rule.
    func watch(
        pid: Int32, duration: Double, mode: LoopTurnMode, waitsInALoop: Bool = true,
        configure: (inout MonitorOptions) -> Void = { _ in }
    )
        throws -> (MonitorSummary, String)
    {
        let run = try watchMonitor(
            pid: pid, duration: duration,
            configure: {
                $0.loopTurns = mode
                configure(&$0)
            },
            beforeRun: { monitor in
                // auto: the stack rule until the loop is first seen idle, then the kernel's counters.
                #expect(monitor.loopTurnEvidence == .stackRule)
            })
        if mode == .stackRule || !waitsInALoop {
            #expect(run.summary.loopTurnEvidence == .stackRule)
        } else if geteuid() == 0 {
            #expect(run.summary.loopTurnEvidence == .kernelCounter, "\(run.monitor.loopTurnsNote ?? "")")
        }
        return (run.summary, run.reportDirectory)
    }

    func steps(_ path: String) throws -> [FixtureStep] { try FixtureStep.read(path) }

    func overlapping(_ stalls: [MonitorSummary.Stall], _ step: FixtureStep) -> [MonitorSummary.Stall] {
        stalls.filter { $0.startMonotonic < step.end_mono && $0.endMonotonic > step.start_mono }
    }

    @Test(arguments: modes)
    func saturatedLoopIsSilentAndOneSlowTurnIsReportedOnce(mode: LoopTurnMode) throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("loop-\(UUID().uuidString).jsonl").path
        defer { unlink(log) }
        // The saturated stretches are long beside the slow turn: the turn-rate check below
        // needs them to outweigh it on a busy machine (2 s each read 84 turns/s beside two CPU hogs).
        let fixture = try FixtureProcess([
            "loop", "--script", "saturate:4,spin:1.3,saturate:3", "--gap", "0.3", "--log", log, "--exit-when-done",
        ])
        let (summary, reportDir) = try watch(pid: fixture.pid, duration: 40, mode: mode)
        defer { try? FileManager.default.removeItem(atPath: reportDir) }
        #expect(summary.targetExited)
        let logged = try steps(log)
        #expect(logged.map(\.kind) == ["saturate", "spin", "saturate"])
        for step in logged {
            let found = overlapping(summary.stalls, step)
            if step.kind == "saturate" {
                #expect(found.isEmpty, "\(mode): the saturated loop was reported: \(found.map { "\($0.topFunction) \($0.duration)" })")
                continue
            }
            #expect(found.count == 1, "\(mode): \(found.count) stalls for the slow turn")
            guard let stall = found.first else { continue }
            #expect(stall.topFunction == "busy_compute")
            #expect(stall.reason == .hang || stall.reason == .starved)
            // Kernel counter: within a probe interval or two; stack rule: within a sample
            // interval. Both with room for a busy 2-core machine (scripts/bench measures).
            #expect(abs(stall.duration - step.seconds) < 0.15, "\(mode): \(stall.duration) vs \(step.seconds)")
        }
        #expect(summary.stalls.count == 1, "\(summary.stalls.map { "\($0.topFunction) \($0.duration)" })")
        #expect(summary.loopTurnEvidence != nil)
        if summary.loopTurnEvidence == .kernelCounter {
            // ~300 turns a second while saturated, 200 while idle (5 ms ticks).
            #expect(Double(summary.loopTurns) / summary.watchedSeconds > 100, "\(summary.loopTurns) turns")
        }
        // The report says which evidence decided.
        let text = try String(contentsOfFile: try #require(summary.stalls.first?.reportPath), encoding: .utf8)
        #expect(text.contains("Loop Turns:"))
        #expect(text.contains(summary.loopTurnEvidence?.rawValue ?? "?"))
    }

    /// The counters are opened only once the loop is seen idle (they slow every system call,
    /// and a test runner never idles), or when a busy episode is half a threshold old: a loop
    /// saturated from its first turn, never seen asleep, is still not a stall, and its turns
    /// are counted from then on.
    @Test(.enabled(if: geteuid() == 0 && (try? LoopTurnCounter.tracepointIDs()) != nil, "needs root and the syscall tracepoints (tracefs)"))
    func aLoopSaturatedFromTheStartIsNotAStall() throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("loop-\(UUID().uuidString).jsonl").path
        defer { unlink(log) }
        let fixture = try FixtureProcess(["loop", "--script", "saturate:5", "--gap", "0", "--log", log, "--exit-when-done"])
        let (summary, reportDir) = try watch(pid: fixture.pid, duration: 30, mode: .auto) {
            $0.launchThreshold = 1.0
        }
        defer { try? FileManager.default.removeItem(atPath: reportDir) }
        #expect(summary.targetExited)
        #expect(try steps(log).map(\.kind) == ["saturate"])
        #expect(summary.stalls.isEmpty, "\(summary.stalls.map { "\($0.reason.name) \($0.topFunction) \($0.duration)" })")
        #expect(summary.loopTurns > 500, "\(summary.loopTurns) turns")
    }

    @Test(arguments: modes)
    func aNestedWaitInsideWorkIsBlocked(mode: LoopTurnMode) throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("loop-\(UUID().uuidString).jsonl").path
        defer { unlink(log) }
        let fixture = try FixtureProcess([
            "loop", "--script", "nested:1.6", "--gap", "0.5", "--log", log, "--exit-when-done",
        ])
        let (summary, reportDir) = try watch(pid: fixture.pid, duration: 30, mode: mode)
        defer { try? FileManager.default.removeItem(atPath: reportDir) }
        let step = try #require(try steps(log).first)
        let found = overlapping(summary.stalls, step)
        #expect(found.count == 1, "\(mode): \(summary.stalls.map { "\($0.reason.name) \($0.topFunction)" })")
        let stall = try #require(found.first)
        #expect(stall.reason == .blocked)
        #expect(stall.topFunction == "nested_wait")
        #expect(abs(stall.duration - step.seconds) < 0.15, "\(stall.duration) vs \(step.seconds)")
        #expect(summary.stalls.count == 1)
    }

    /// nginx's master and signal-driven supervisors park in sigsuspend for their whole life:
    /// that is their idle, not one endless blocked call.
    @Test func aProcessParkedInSigsuspendIsIdle() throws {
        let fixture = try FixtureProcess(["park"])
        let (summary, reportDir) = try watch(pid: fixture.pid, duration: 2.5, mode: .auto, waitsInALoop: false) {
            $0.threshold = 0.5
            $0.launchThreshold = 0.5
        }
        defer { try? FileManager.default.removeItem(atPath: reportDir) }
        #expect(summary.stalls.isEmpty, "\(summary.stalls.map { "\($0.reason.name) \($0.topFunction)" })")
    }

    /// An agent refused the kernel counters (an unprivileged user with only the ptrace
    /// capabilities, kernel.perf_event_paranoid 2) says so once, falls back to the stack rule,
    /// still reports the stall, and the report names the evidence and why; with CAP_PERFMON
    /// added the counters work.
    @Test(.enabled(if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs root and setpriv (util-linux)"))
    func refusedCountersFallBackToTheStackRuleWithOneLine() throws {
        _ = try? LoopTurnCounter.tracepointIDs()  // as root: mounts tracefs if it is missing
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stallagent-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        chown(dir, 65534, 65534)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func agent(caps: String, reports: String) throws -> CommandResult {
            let fixture = try FixtureProcess(["loop", "--script", "spin:1.3", "--gap", "0.3", "--exit-when-done"])
            return try runCommand(
                URL(fileURLWithPath: "/usr/bin/setpriv"),
                [
                    "--reuid=65534", "--regid=65534", "--clear-groups", "--no-new-privs", "--inh-caps=-all\(caps)",
                    "--ambient-caps=-all\(caps)", "--bounding-set=-all\(caps)",
                    FixtureProcess.stallagentURL.path, "--pid", "\(fixture.pid)", "--report-dir", dir + "/" + reports,
                    "--launch-threshold", "1s",
                ], timeout: 30)
        }
        let refused = try agent(caps: ",+sys_ptrace,+dac_read_search", reports: "a")
        #expect(refused.status == 0, "\(refused.stderr)")
        let fallbackLines = refused.stderr.split(separator: "\n").filter { $0.contains("loop turns:") }
        #expect(fallbackLines.count == 1, "\(refused.stderr)")
        #expect(fallbackLines.first?.contains("using the stack rule") == true)
        #expect(fallbackLines.first?.contains("CAP_PERFMON") == true)
        #expect(refused.stderr.contains("busy_compute"), "\(refused.stderr)")
        let json = try FileManager.default.contentsOfDirectory(atPath: dir + "/a").first { $0.hasSuffix(".json") }
        let report = try String(contentsOfFile: dir + "/a/" + (try #require(json)), encoding: .utf8)
        #expect(report.contains("\"loopTurns\" : \"stack rule\""), "\(report.prefix(400))")
        #expect(report.contains("loopTurnsNote"))

        let permitted = try agent(caps: ",+sys_ptrace,+dac_read_search,+perfmon", reports: "b")
        #expect(permitted.status == 0, "\(permitted.stderr)")
        #expect(!permitted.stderr.contains("loop turns:"), "\(permitted.stderr)")
        #expect(permitted.stderr.contains("turns from the kernel counter"), "\(permitted.stderr)")
    }

    /// A process that exits while its counters are being opened is gone, not "counters
    /// unavailable": the kernel answers ENODEV for a task past exit(), and the wrapper printed
    /// the fallback line for a `sh -c 'exit N'` about once in a few hundred runs (a red CI run).
    @Test(.enabled(if: (try? LoopTurnCounter.tracepointIDs()) != nil, "needs the syscall tracepoints (tracefs)"))
    func aTargetExitingDuringTheOpenIsGoneNotUnavailable() throws {
        var opened = 0
        var gone = 0
        for _ in 0..<200 {
            let pid = try CleanProcess.spawn("/bin/true", [])
            do {
                _ = try LoopTurnCounter(tid: pid)
                opened += 1
            } catch StallAgentError.noSuchProcess {
                gone += 1
            } catch {
                Issue.record("pid \(pid): \(error)")
            }
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
        }
        #expect(opened + gone == 200)
    }

    /// Closing a tracepoint's last perf event waits for an RCU grace period (~40 ms here): an
    /// agent that held the loop counters and the waker (9 tracepoints) took ~0.35 s to exit,
    /// and its loop stood still as long whenever a watched process ended. Anchored tracepoints
    /// and a child that releases them after the agent is gone bring the stop to a few ms. The
    /// best of three stops must stay below one grace period per tracepoint.
    @Test(.enabled(if: geteuid() == 0 && (try? LoopTurnCounter.tracepointIDs()) != nil, "needs root and the syscall tracepoints (tracefs)"))
    func anAgentHoldingCountersStopsWithoutWaitingForTheirRelease() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stallagent-test-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fixture = try FixtureProcess(["idle"])
        var best = Double.infinity
        for _ in 0..<3 {
            let agent = Process()
            agent.executableURL = FixtureProcess.stallagentURL
            agent.arguments = ["--pid", "\(fixture.pid)", "--report-dir", dir]
            agent.standardOutput = FileHandle.nullDevice
            agent.standardError = FileHandle.nullDevice
            try agent.run()
            // Counters open at the first idle probe, the waker once the wait has settled: wait
            // until the agent holds perf events and their number has held for 200 ms.
            var held = (count: 0, since: MonotonicTime.seconds())
            let deadline = MonotonicTime.seconds() + 20
            while MonotonicTime.seconds() < deadline {
                let count = KernelState.perfEvents(agent.processIdentifier)
                if count != held.count {
                    held = (count, MonotonicTime.seconds())
                } else if count >= 2 && MonotonicTime.seconds() - held.since >= 0.2 {
                    break
                }
                usleep(10_000)
            }
            if held.count < 2 {
                kill(agent.processIdentifier, SIGKILL)
                agent.waitUntilExit()
            }
            try #require(held.count >= 2, "the agent opened \(held.count) perf events")
            let start = MonotonicTime.seconds()
            kill(agent.processIdentifier, SIGTERM)
            agent.waitUntilExit()
            best = min(best, MonotonicTime.seconds() - start)
            #expect(agent.terminationStatus == 0)
        }
        #expect(best < 0.2, "best stop took \(best) s")
    }

    /// With the kernel's events available, an agent watching an idle loop sleeps until the
    /// thread leaves its wait (issue 14): a handful of wake-ups a second for housekeeping, not
    /// one per 10 ms probe; the target still sees no EINTR; and a stall that starts after a
    /// long idle stretch is still caught and timed from the moment the wait returned.
    @Test(.enabled(if: LoopWaker.available, "needs perf events on its own threads"))
    func anIdleWatchSleepsUntilTheThreadWakes() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stallagent-test-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fixture = try FixtureProcess(["idle"])
        let agent = Process()
        agent.executableURL = FixtureProcess.stallagentURL
        agent.arguments = ["--pid", "\(fixture.pid)", "--report-dir", dir, "--duration", "4s"]
        agent.standardOutput = FileHandle.nullDevice
        agent.standardError = FileHandle.nullDevice
        try agent.run()
        func switches() -> Int {
            let status = (try? String(contentsOfFile: "/proc/\(agent.processIdentifier)/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
            return line.flatMap { Int($0.split(separator: "\t").last ?? "") } ?? -1
        }
        usleep(1_000_000)
        let before = switches()
        usleep(2_000_000)
        let after = switches()
        agent.waitUntilExit()
        // Probing every 10 ms would be ~200 wake-ups in these 2 s.
        #expect(before >= 0 && after - before < 40, "\(after - before) wake-ups in 2 s")
        fixture.signal(SIGUSR1)
        let line = try fixture.waitForLine(prefix: "eintr=")
        #expect(line.hasPrefix("eintr=0 "), "target saw EINTR: \(line)")

        // A loop with nothing to do for 2.5 s (no timer: the agent sleeps the whole time),
        // then a 1.3 s blocking call, then idle again until it exits.
        let script = "import select, time, sys; print('ready', flush=True); select.select([], [], [], 2.5); time.sleep(1.3); select.select([], [], [], 1.5)"
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", script]
        let pipe = Pipe()
        python.standardOutput = pipe
        try python.run()
        _ = pipe.fileHandleForReading.availableData  // "ready": in select from here on
        let result = try runCommand(
            FixtureProcess.stallagentURL, ["--pid", "\(python.processIdentifier)", "--report-dir", dir + "/py"], timeout: 30)
        python.waitUntilExit()
        #expect(result.status == 0, "\(result.stderr)")
        let stall = result.stderr.split(separator: "\n").first { $0.hasPrefix("stall #1 0xbaadca11 blocked") }
        let words = stall.map { $0.split(separator: " ") } ?? []
        let seconds = words.firstIndex(of: "blocked").flatMap { Double(words[$0 + 1]) }
        #expect(seconds.map { abs($0 - 1.3) < 0.1 } == true, "\(result.stderr)")
    }

    /// What the tracepoints cost the host (docs/architecture.md): while any system-call
    /// tracepoint event is open, every system call on the machine takes the slow path. A loop
    /// the agent sleeps on rests its counters, and once none has been open for
    /// `TracepointAnchors.releaseAfter` the agent holds no tracepoint at all, only the
    /// wake-up (a context-switch event). Resting costs no exactness: when the loop wakes into a
    /// saturated stretch the counters open again and count its turns (no stall), and a slow
    /// call after it is reported once, timed from its start.
    @Test(.enabled(if: geteuid() == 0 && (try? LoopTurnCounter.tracepointIDs()) != nil, "needs root and the syscall tracepoints (tracefs)"))
    func anIdleLoopHoldsNoTracepointAndItsCountersReturnWhenItSaturates() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stallagent-test-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Idle in its loop's wait until told (stdin), then 3 s of turns back to back (select
        // with no timeout returns at once), then a 1.3 s blocking call, then idle.
        let script = """
            import select, sys, time
            print('ready', flush=True)
            select.select([sys.stdin], [], [])
            sys.stdin.readline()
            end = time.monotonic() + 3
            while time.monotonic() < end:
                select.select([], [], [], 0)
            time.sleep(1.3)
            select.select([], [], [], 1.5)
            """
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", script]
        let output = Pipe()
        let input = Pipe()
        python.standardOutput = output
        python.standardInput = input
        try python.run()
        defer { if python.isRunning { python.terminate() } }
        _ = output.fileHandleForReading.availableData  // "ready": in its wait from here on
        let errURL = URL(fileURLWithPath: dir + ".err")
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer { unlink(errURL.path) }
        let agent = Process()
        agent.executableURL = FixtureProcess.stallagentURL
        agent.arguments = ["--pid", "\(python.processIdentifier)", "--report-dir", dir, "--threshold", "1s"]
        agent.standardOutput = FileHandle.nullDevice
        agent.standardError = try FileHandle(forWritingTo: errURL)
        try agent.run()
        defer { if agent.isRunning { kill(agent.processIdentifier, SIGKILL) } }
        // Counters open at the first idle probe, rest once the agent sleeps on the wait, and
        // the tracepoints go `releaseAfter` later: then only the wake-up's event is left. The
        // wake-up is opened at the attach, so one event alone before the counters opened
        // says nothing: wait for them first.
        var held = -1
        var countersSeen = false
        let deadline = MonotonicTime.seconds() + TracepointAnchors.releaseAfter + 8
        while MonotonicTime.seconds() < deadline {
            held = KernelState.perfEvents(agent.processIdentifier)
            if held > 1 { countersSeen = true }
            if countersSeen, held == 1 { break }
            usleep(20_000)
        }
        #expect(countersSeen, "the counters never opened")
        #expect(held == 1, "the agent of an idle loop still holds \(held) perf events")
        input.fileHandleForWriting.write("go\n".data(using: .utf8)!)
        python.waitUntilExit()
        kill(agent.processIdentifier, SIGINT)
        agent.waitUntilExit()
        let stderr = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        #expect(agent.terminationStatus == 0, "\(stderr)")
        let stalls = stderr.split(separator: "\n").filter { $0.hasPrefix("stall #") }
        #expect(stalls.count == 1, "the saturated stretch was reported, or the slow call not: \(stderr)")
        let words = stalls.first.map { $0.split(separator: " ") } ?? []
        let seconds = words.firstIndex(of: "blocked").flatMap { Double(words[$0 + 1]) }
        #expect(seconds.map { abs($0 - 1.3) < 0.1 } == true, "\(stderr)")
        #expect(stderr.contains("turns from the kernel counter"), "\(stderr)")
    }

    /// `--busy-frame` turns a parking wait back into work for programs where it is one.
    @Test func busyFrameMarksAParkingWaitAsWork() throws {
        let fixture = try FixtureProcess(["park"])
        let (summary, reportDir) = try watch(pid: fixture.pid, duration: 2.5, mode: .auto) {
            $0.threshold = 0.5
            $0.launchThreshold = 0.5
            $0.busyFramePatterns = ["park_for_*"]
        }
        defer { try? FileManager.default.removeItem(atPath: reportDir) }
        #expect(summary.stalls.count == 1)
        #expect(summary.stalls.first?.reason == .blocked)
        #expect(summary.stalls.first?.topFunction == "park_for_signals")
    }
}
