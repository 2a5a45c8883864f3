import Foundation
import Testing

@testable import StallMonitoring

#if canImport(Glibc)
import Glibc
#endif

/// The watchdog against real event loops under real ptrace. The fixture logs its own stall
/// windows on CLOCK_MONOTONIC, the clock the agent uses: that log is the oracle.
@Suite(.serialized) struct MonitorIntegrationTests {
    struct LoggedStep: Decodable {
        var kind: String
        var start_mono: Double
        var end_mono: Double
        var seconds: Double
    }

    func temporaryDirectory() -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stallagent-test-\(UUID().uuidString)").path
        return dir
    }

    func watch(pid: Int32, duration: Double?, configure: (inout MonitorOptions) -> Void = { _ in }) throws -> (MonitorSummary, String) {
        var options = MonitorOptions()
        options.reportDirectory = temporaryDirectory()
        options.duration = duration
        options.quiet = true
        configure(&options)
        let monitor = try StallMonitor(pid: pid, options: options, log: { _ in })
        return (monitor.run(), options.reportDirectory)
    }

    func readLog(_ path: String) throws -> [LoggedStep] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
            try JSONDecoder().decode(LoggedStep.self, from: Data($0.utf8))
        }
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
        let steps = try readLog(log)
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
            #expect(stall.reason.name == want.reason, "\(step.kind): reason \(stall.reason.name)")
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
        #expect(summary.samples > 0, "busy bursts should have been sampled")
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

    /// A loop that idles somewhere other than epoll/poll/select is taught with --idle-syscall
    /// or --idle-frame; without them the same wait is a stall.
    @Test func idleSyscallAndIdleFrameTeachOtherLoops() throws {
        let fixture = try FixtureProcess(["pipe"])
        func stalls(_ configure: (inout MonitorOptions) -> Void) throws -> Int {
            let (summary, dir) = try watch(pid: fixture.pid, duration: 1.2) {
                $0.threshold = 0.4
                $0.launchThreshold = 0.4
                configure(&$0)
            }
            try? FileManager.default.removeItem(atPath: dir)
            return summary.stalls.count
        }
        #expect(try stalls { _ in } == 1)
        #expect(try stalls { $0.extraIdleSyscalls = [0] } == 0)  // read
        #expect(try stalls { $0.idleFramePatterns = ["read_from_*"] } == 0)
        #expect(try stalls { $0.idleFramePatterns = ["no_such_function"] } == 1)
    }
}
