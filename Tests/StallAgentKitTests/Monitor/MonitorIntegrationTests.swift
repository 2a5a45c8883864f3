import Foundation
import Synchronization
import Testing

@testable import StallMonitoring

#if canImport(Glibc)
import Glibc
#endif

/// The watchdog against real event loops under real ptrace. The fixture logs its own stall
/// windows on CLOCK_MONOTONIC, the clock the agent uses: that log is the oracle.
@Suite(.serialized, .tags(.timed)) struct MonitorIntegrationTests {
    func temporaryDirectory() -> String { temporaryPath() }

    func watch(pid: Int32, duration: Double?, configure: (inout MonitorOptions) -> Void = { _ in }) throws -> (MonitorSummary, String) {
        let run = try watchMonitor(pid: pid, duration: duration, configure: configure)
        return (run.summary, run.reportDirectory)
    }

    /// Every kind of stall in one event-loop run: each reported once, with the right reason,
    /// the culprit function in the heaviest stack, and a duration close to the fixture's own.
    @Test func eachStallKindIsReportedOnceWithTheRightReason() throws {
        let log = temporaryDirectory() + ".jsonl"
        defer { unlink(log) }
        let fixture = try FixtureProcess([
            "loop", "--script", "spin:1.5,sleep:1.3,mutex:1.3,pipe:1.3,io:1.3,starve:1.6,short:1.5",
            "--gap", "0.4", "--log", log, "--exit-when-done",
        ])
        let (summary, reportDir) = try watch(pid: fixture.pid, duration: 60)
        defer { try? FileManager.default.removeItem(atPath: reportDir) }
        #expect(summary.targetExited)
        let steps = try FixtureStep.read(log)
        #expect(steps.count == 7)
        let expected: [String: (reason: String, function: String)] = [
            "spin": ("hang", "busy_compute"), "sleep": ("blocked", "blocking_sleep"),
            "mutex": ("lock", "lock_contention"), "pipe": ("blocked", "wait_on_pipe"),
            "io": ("io", "disk_io"), "starve": ("starved", "starved_compute"),
        ]
        for step in steps {
            let overlapping = summary.stalls.filter { $0.startMonotonic < step.end_mono && $0.endMonotonic > step.start_mono }
            if step.kind == "short" {
                #expect(overlapping.isEmpty, "short events were reported as a stall: \(overlapping)")
                continue
            }
            guard let want = expected[step.kind] else { continue }
            #expect(overlapping.count == 1, "\(step.kind): \(overlapping.count) stalls reported")
            guard let stall = overlapping.first else { continue }
            // The io step's 8 MiB writes are a memory copy on CPU until fsync waits on the disk:
            // where the disk absorbs them at once (a clean-clone CI at 9da66c3), the copy dominates
            // and the step reads as a hang; its function, length and single report still hold.
            let allowed = step.kind == "io" ? ["io", "hang"] : [want.reason]
            #expect(allowed.contains(stall.reason.name), "\(step.kind): reason \(stall.reason.name)")
            #expect(stall.heaviestFunctions.contains(want.function), "\(step.kind): \(stall.heaviestFunctions)")
            // ±2 probe intervals of truth is the goal (scripts/bench); tests leave room for a busy 2-core box.
            #expect(abs(stall.duration - step.seconds) < 0.15, "\(step.kind): \(stall.duration) vs \(step.seconds)")
            #expect(stall.reportPath != nil)
            if step.kind == "mutex" { #expect(stall.lockOwnerName == "lockholder") }
        }
        #expect(summary.stalls.count == 6, "\(summary.stalls.map { "\($0.reason.name) \($0.topFunction)" })")
        // Reports on disk: text, JSON and folded stacks for each stall.
        let files = try FileManager.default.contentsOfDirectory(atPath: reportDir)
        #expect(files.filter { $0.hasSuffix(".json") }.count == 6)
        #expect(files.filter { $0.hasSuffix(".txt") }.count == 6)
        #expect(!files.contains { $0.hasPrefix(".") }, "temporary files left: \(files)")
    }

    /// 3 ms of work in every 5 ms tick for three thresholds: busy 60 % of the time, never
    /// stalled.
    @Test func healthyLoopServingShortEventsYieldsNoReport() throws {
        let fixture = try FixtureProcess(["loop", "--script", "short:3", "--gap", "0.3", "--exit-when-done"])
        let (summary, reportDir) = try watch(pid: fixture.pid, duration: 40)
        defer { try? FileManager.default.removeItem(atPath: reportDir) }
        #expect(summary.stalls.isEmpty, "\(summary.stalls.map { "\($0.reason.name) \($0.duration)" })")
        // The bursts were seen and a sample asked for; none stopped the loop. Kernel sampling
        // starts two probe intervals into an episode, and with loop turns counted a 3 ms burst
        // ends long before: its sample is put off, not taken (docs/architecture.md, "Stops only
        // past half the threshold"). Without counters (the stack rule) it is taken.
        #expect(summary.samples + summary.samplesPutOff > 0, "busy bursts should have been asked for")
        #expect(summary.capturesWithStop == 0, "a healthy loop is never stopped")
    }

    @Test func deadlockIsNamedWithItsOwner() throws {
        let fixture = try FixtureProcess(["deadlock"])
        let (summary, reportDir) = try watch(pid: fixture.pid, duration: 2.5) {
            $0.threshold = 0.5
            $0.launchThreshold = 0.5
        }
        defer { try? FileManager.default.removeItem(atPath: reportDir) }
        #expect(summary.stalls.count == 1)
        let stall = try #require(summary.stalls.first)
        #expect(stall.deadlock)
        #expect(stall.reason.name == "deadlock")
        #expect(stall.reason.hexCode == "0xdead10cc")
        #expect(stall.lockOwnerName == "worker")
        let json = try String(contentsOfFile: try #require(stall.reportPath).replacingOccurrences(of: ".txt", with: ".json"), encoding: .utf8)
        #expect(json.contains("\"deadlock\" : true") || json.contains("\"deadlock\":true"))
        #expect(json.contains("deadlock_worker_side"), "owner stack missing")
    }

    @Test func stoppedProcessIsNotAStall() throws {
        let fixture = try FixtureProcess(["idle"])
        let pid = fixture.pid
        let stopper = Thread {
            usleep(300_000)
            kill(pid, SIGSTOP)
            usleep(3_000_000)
            kill(pid, SIGCONT)
        }
        stopper.start()
        let (summary, reportDir) = try watch(pid: fixture.pid, duration: 4.5)
        defer { try? FileManager.default.removeItem(atPath: reportDir) }
        #expect(summary.stalls.isEmpty, "\(summary.stalls.map { "\($0.reason.name) \($0.duration)" })")
    }

    @Test func slowStartBelowTheLaunchThresholdIsNotAStall() throws {
        let fixture = try FixtureProcess(["slow-start", "2"], waitForReady: false)
        let (summary, reportDir) = try watch(pid: fixture.pid, duration: 3.5)
        defer { try? FileManager.default.removeItem(atPath: reportDir) }
        #expect(summary.stalls.isEmpty, "\(summary.stalls.map { "\($0.phase) \($0.duration)" })")
    }

    @Test func slowStartAboveTheLaunchThresholdIsALaunchStall() throws {
        // 1.5 s past the threshold: the attach itself (symbols) took over a second once on a
        // loaded machine, and the spin is counted from the first sample.
        let fixture = try FixtureProcess(["slow-start", "3"], waitForReady: false)
        let (summary, reportDir) = try watch(pid: fixture.pid, duration: 4.5) { $0.launchThreshold = 1.5 }
        defer { try? FileManager.default.removeItem(atPath: reportDir) }
        #expect(summary.stalls.count == 1)
        #expect(summary.stalls.first?.phase == .launch)
        #expect(summary.stalls.first?.heaviestFunctions.contains("slow_startup_init") == true)
    }

    @Test func processDyingMidStallGetsADiedReport() throws {
        let fixture = try FixtureProcess(["loop", "--script", "die:2", "--gap", "0.5"])
        let (summary, reportDir) = try watch(pid: fixture.pid, duration: 10)
        defer { try? FileManager.default.removeItem(atPath: reportDir) }
        #expect(summary.targetExited)
        #expect(summary.stalls.count == 1)
        #expect(summary.stalls.first?.reason.name == "died")
        #expect(summary.stalls.first?.reason.hexCode == "0xdeadfa11")
        #expect(summary.stalls.first?.heaviestFunctions.contains("dying_compute") == true)
    }

    @Test func killAfterTerminatesAndSaysSo() throws {
        let fixture = try FixtureProcess(["loop", "--script", "spin:30", "--gap", "0.3"])
        let (summary, reportDir) = try watch(pid: fixture.pid, duration: 15) { $0.killAfter = 1.5 }
        defer { try? FileManager.default.removeItem(atPath: reportDir) }
        #expect(summary.targetExited)
        #expect(fixture.waitForExit(timeout: 5))
        #expect(fixture.process.terminationReason == .uncaughtSignal)
        let stall = try #require(summary.stalls.first)
        #expect(stall.terminated)
        #expect(stall.duration < 5)
        let text = try String(contentsOfFile: try #require(stall.reportPath), encoding: .utf8)
        #expect(text.contains("SIGABRT"))
    }

    /// The same stall again and again is counted; reports are written for occurrences
    /// 1, 2, 3, 5, 8 … only, so a flapping service cannot fill the disk.
    @Test func recurringStallIsCountedNotRewrittenWithoutLimit() throws {
        let fixture = try FixtureProcess(["loop", "--script", "spin:0.8,spin:0.8,spin:0.8,spin:0.8", "--gap", "0.4", "--exit-when-done"])
        let (summary, reportDir) = try watch(pid: fixture.pid, duration: 20) { $0.threshold = 0.5 }
        defer { try? FileManager.default.removeItem(atPath: reportDir) }
        #expect(summary.stalls.map(\.occurrence) == [1, 2, 3, 4])
        #expect(summary.stalls.map { $0.reportPath != nil } == [true, true, true, false])
        let files = try FileManager.default.contentsOfDirectory(atPath: reportDir)
        #expect(files.filter { $0.hasSuffix(".json") }.count == 3)
    }

    /// A process that has sat in one blocking call since the agent first saw it, with no
    /// event loop, is a helper in its parking wait (issue 24: multiprocessing's resource
    /// tracker reads its pipe for life): no stall, at the launch threshold or later.
    /// `--busy-frame` says such a wait is work after all; `--idle-syscall`/`--idle-frame` keep
    /// it idle.
    @Test func aHelperBlockedForLifeIsParkedUnlessSaidToBeWork() throws {
        let fixture = try FixtureProcess(["pipe"])
        func stalls(_ configure: (inout MonitorOptions) -> Void) throws -> Int {
            let (summary, dir) = try watch(pid: fixture.pid, duration: 1.2) {
                $0.threshold = 0.4
                $0.launchThreshold = 0.4
                $0.firstWaitIsParking = true  // as in a family or unit watch
                configure(&$0)
            }
            try? FileManager.default.removeItem(atPath: dir)
            return summary.stalls.count
        }
        #expect(try stalls { _ in } == 0)
        // Pointed at alone, the process stuck in read() is reported.
        #expect(try stalls { $0.firstWaitIsParking = false } == 1)
        #expect(try stalls { $0.busyFramePatterns = ["read_from_*"] } == 1)
        #expect(try stalls { $0.extraIdleSyscalls = [0] } == 0)  // read
        #expect(try stalls { $0.idleFramePatterns = ["read_from_*"] } == 0)
    }

    /// A program that re-executes itself (same pid, path and name, as haproxy's master does on
    /// every reload) is a new program: an exec line, and what the old one taught (its waits,
    /// its launch) is forgotten, so the new program's stall is its own, with its own frames.
    @Test func aSelfReExecIsSaidAndStartsTheWatchAfresh() throws {
        let fixture = try FixtureProcess(["exec-soon", "400"])
        var options = MonitorOptions()
        options.reportDirectory = temporaryDirectory()
        options.duration = 2.5
        options.launchThreshold = 0.8
        defer { try? FileManager.default.removeItem(atPath: options.reportDirectory) }
        let lines = Mutex<[String]>([])
        let monitor = try StallMonitor(pid: fixture.pid, options: options, log: { line in lines.withLock { $0.append(line) } })
        let summary = monitor.run()
        let logged = lines.withLock { $0 }
        #expect(logged.filter { $0.contains("exec'd") }.count == 1, "\(logged)")
        #expect(summary.stalls.count == 1, "\(summary.stalls.map(\.heaviestFunctions))")
        let stall = try #require(summary.stalls.first)
        #expect(stall.heaviestFunctions.contains("run_spin"), "\(stall.heaviestFunctions)")
        #expect(!stall.heaviestFunctions.contains("spin_then_exec"), "\(stall.heaviestFunctions)")
    }

    /// A process found in a mutex wait is never taken for a parked helper: a deadlock the
    /// agent attaches to is reported.
    @Test func aProcessFoundInAMutexWaitIsStillALockStall() throws {
        let fixture = try FixtureProcess(["mutex"])
        let (summary, dir) = try watch(pid: fixture.pid, duration: 1.2) {
            $0.threshold = 0.4
            $0.launchThreshold = 0.4
            $0.firstWaitIsParking = true
        }
        try? FileManager.default.removeItem(atPath: dir)
        #expect(summary.stalls.count == 1)
        #expect(summary.stalls.first?.reason.name == "lock")
    }
}
