import Foundation
import Synchronization
import Testing

@testable import StallProc
@testable import StallCapture
@testable import StallMonitoring

#if canImport(Glibc)
import Glibc
#endif

/// A running main thread sampled by perf_event (issue 14): the same stacks as a ptrace stop
/// gives, and the target never stopped — never seen in the `t` state while it is watched.
@Suite(.serialized, .tags(.timed)) struct PerfSamplingTests {
    static let available: Bool = (try? PerfStackSampler(tid: getpid(), period: 0.025, stackBytes: 16384)) != nil

    /// Watches `fixture` until it exits (30 s at most), quietly, into a report directory
    /// removed afterwards.
    private func watch(_ fixture: FixtureProcess, perfSampling: Bool = true) throws -> (StallMonitor, MonitorSummary) {
        let run = try watchMonitor(pid: fixture.pid, duration: 30) { $0.perfSampling = perfSampling }
        try? FileManager.default.removeItem(atPath: run.reportDirectory)
        return (run.monitor, run.summary)
    }

    @Test(.enabled(if: available, "perf_event sampling of a thread is not permitted here (root, CAP_PERFMON or perf_event_paranoid <= 1)"))
    func aHangIsSampledWithoutStoppingTheThread() throws {
        let fixture = try FixtureProcess(["loop", "--script", "spin:1.6", "--gap", "0.6", "--exit-when-done"])
        // Watch the target's state from outside as fast as the test can: a ptrace stop shows as 't'.
        let stopped = Mutex(0)
        let pid = fixture.pid
        let watcher = Thread {
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline, let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let stat = ProcThreadStat.parse(text), stat.state != "Z"
            {
                if stat.state == "t" { stopped.withLock { $0 += 1 } }
                usleep(1000)
            }
        }
        watcher.start()
        let (monitor, summary) = try watch(fixture)
        let stall = try #require(summary.stalls.first, "no stall reported")
        #expect(summary.stallCount == 1)
        #expect(stall.reason == .hang)
        #expect(stall.heaviestFunctions.contains("busy_compute"), "\(stall.heaviestFunctions)")
        #expect(stall.heaviestFunctions.contains("main"), "\(stall.heaviestFunctions)")
        #expect(monitor.inspector.perfSamples >= 10, "\(monitor.inspector.perfSamples) perf samples")
        // The first sample of an episode may come before the kernel's first one.
        #expect(summary.capturesWithStop <= 2, "\(summary.capturesWithStop) ptrace stops")
        #expect(stopped.withLock { $0 } <= 2, "target seen stopped")
    }

    /// A thread busy mostly in system calls (a server under load) is sampled by the kernel
    /// too: its ticks land in the kernel, and the sample still carries the user registers and
    /// stack. Counting user time only, such a loop gave no sample for seconds and was stopped
    /// by ptrace instead (Redis under redis-benchmark: 14 of 63 samples).
    @Test(.enabled(if: available, "perf_event sampling of a thread is not permitted here (root, CAP_PERFMON or perf_event_paranoid <= 1)"))
    func aSyscallHeavyHangIsSampledWithoutStops() throws {
        let fixture = try FixtureProcess(["loop", "--script", "syscalls:1.6", "--gap", "0.6", "--exit-when-done"])
        let (monitor, summary) = try watch(fixture)
        let stall = try #require(summary.stalls.first, "no stall reported")
        #expect(summary.stallCount == 1)
        #expect(stall.heaviestFunctions.contains("syscall_heavy_compute"), "\(stall.heaviestFunctions)")
        #expect(stall.heaviestFunctions.contains("main"), "\(stall.heaviestFunctions)")
        #expect(monitor.inspector.perfSamples >= 10, "\(monitor.inspector.perfSamples) perf samples")
        #expect(summary.capturesWithStop <= 2, "\(summary.capturesWithStop) ptrace stops")
    }

    /// The ptrace path stays the fallback: with perf sampling off, every running sample stops.
    @Test func withPerfSamplingOffRunningSamplesStop() throws {
        let fixture = try FixtureProcess(["loop", "--script", "spin:1.3", "--gap", "0.6", "--exit-when-done"])
        let (monitor, summary) = try watch(fixture, perfSampling: false)
        #expect(summary.stallCount == 1)
        #expect(summary.stalls.first?.heaviestFunctions.contains("busy_compute") == true)
        #expect(monitor.inspector.perfSamples == 0)
        #expect(summary.capturesWithStop >= 10, "\(summary.capturesWithStop) ptrace stops")
    }

    /// The stack copy shrinks to the stack the samples use and every later sample still
    /// unwinds to `main`; a copy made too small grows back at the first truncated sample.
    @Test(.enabled(if: available, "perf_event sampling of a thread is not permitted here (root, CAP_PERFMON or perf_event_paranoid <= 1)"))
    func theStackCopyIsSizedToTheStack() throws {
        let fixture = try FixtureProcess(["deep", "120"])
        usleep(100_000)
        let inspector = try ProcessInspector(pid: fixture.pid)
        let sampler = try PerfStackSampler(tid: fixture.pid, period: 0.005, stackBytes: PerfStackSampler.maxStackBytes)
        sampler.setEnabled(true)
        var complete = 0
        let deadline = Date().addingTimeInterval(10)
        while complete < 20, Date() < deadline {
            usleep(12_000)
            guard let sample = sampler.latest(pid: fixture.pid) else { continue }
            let stack = inspector.unwind(sample)
            sampler.fit(sample, stack)
            let names = inspector.symbolizer.symbolize(stack).map(\.function)
            #expect(stack.end == .complete, "\(stack.end) after \(sampler.resizes) resizes")
            #expect(names.contains("main") && names.filter { $0 == "recurse_deep" }.count >= 100, "\(names)")
            if stack.end == .complete { complete += 1 }
        }
        #expect(complete == 20)
        #expect(sampler.stackBytes < 16384 && sampler.resizes == 1, "\(sampler.stackBytes) bytes, \(sampler.resizes) resizes")
        #expect(sampler.truncatedSamples == 0)
    }

    @Test func copySizeLeavesRoomAboveTheOutermostFrame() {
        #expect(PerfStackSampler.copySize(forDepth: 300, limit: 65528) == 4096)
        #expect(PerfStackSampler.copySize(forDepth: 8000, limit: 65528) == 12288)
        #expect(PerfStackSampler.copySize(forDepth: 60000, limit: 65528) == 65528)
    }
}
