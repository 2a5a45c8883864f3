import Foundation
import StallMonitoring
import StallProc

#if canImport(Glibc)
import Glibc
#endif

/// `stallagent-bench --syscall-only`: what the loop-turn evidence costs a system call (issue
/// 23, "Syscall-heavy targets"). The kernel counters are perf events on the
/// `syscalls:sys_enter_*` tracepoints; while any such event exists the kernel sends system
/// calls through its slow path. A loop that waits in epoll_wait and then makes 4000 getppid
/// calls per turn (`stall-fixtures syscall-loop`) reports the CPU nanoseconds of one call as it
/// pays them; rounds alternate the modes so drift and warm-up fall on all of them:
/// - unwatched;
/// - watched, kernel counter (the default where permitted), stack rule, and the kernel counter
///   with wait stamps (a family's members);
/// - a bystander: unwatched while the agent watches *another* loop with the kernel counter, and
///   the same with the stack rule (no tracepoint: what the other loop and agent cost alone);
/// - a bystander while the agent watches another loop that is idle, with the defaults: its
///   counters rest while it sleeps and the tracepoints go once none is open
///   (`TracepointAnchors.releaseAfter`), so the bystander should pay nothing.
/// Each for a loop that never blocks (WAITMS 0: a saturated server) and one that waits 1 ms a
/// turn (a busy but healthy one).
struct SyscallCostBenchmark {
    let fixtures: URL
    let agentBinary: URL

    struct Mode {
        let name: String
        let watch: [String]?
        let bystander: Bool
        /// The other loop is idle (`stall-fixtures idle`), watched from before the run.
        var otherIdle = false
    }

    static let modes = [
        Mode(name: "unwatched", watch: nil, bystander: false),
        Mode(name: "kernel counter", watch: ["--loop-turns", "kernel-counter"], bystander: false),
        Mode(name: "stack rule", watch: ["--loop-turns", "stack-rule"], bystander: false),
        // Watched as a family (`--follow-children`): the counter also stamps each wait's
        // entry and exit (docs/architecture.md, "Wait stamps").
        Mode(name: "counter, stamped", watch: ["--loop-turns", "kernel-counter", "--follow-children"], bystander: false),
        Mode(name: "bystander", watch: ["--loop-turns", "kernel-counter"], bystander: true),
        // The same other loop and agent, without tracepoints: what sharing the machine costs.
        Mode(name: "bystander, stack rule", watch: ["--loop-turns", "stack-rule"], bystander: true),
        Mode(name: "bystander, other idle", watch: [], bystander: true, otherIdle: true),
    ]

    func run(quick: Bool) throws {
        let rounds = quick ? 3 : 9
        let seconds = quick ? 2 : 3
        print("system-call cost (stall-fixtures syscall-loop: getppid ×4000 a turn), \(rounds) rounds of \(seconds) s, modes alternating")
        for waitMs in [0, 1] {
            var perCall: [String: [Double]] = [:]
            for round in 0..<rounds {
                for offset in 0..<Self.modes.count {
                    let mode = Self.modes[(round + offset) % Self.modes.count]
                    if let value = try measure(mode, waitMs: waitMs, seconds: seconds) { perCall[mode.name, default: []].append(value) }
                }
            }
            print("  loop waiting \(waitMs) ms a turn\(waitMs == 0 ? " (never blocks: saturated)" : ""):")
            let base = (perCall["unwatched"] ?? []).sorted()
            let baseMedian = Percentiles(base).p50
            for mode in Self.modes {
                let values = (perCall[mode.name] ?? []).sorted()
                let interval = WrapperBenchmark.medianInterval(values)
                var line =
                    "    " + mode.name.padding(toLength: 22, withPad: " ", startingAt: 0)
                    + String(
                        format: "ns per call median %.1f (90 %% CI %.1f–%.1f, n=%d)", Percentiles(values).p50, interval.low, interval.high,
                        values.count)
                if mode.watch != nil, baseMedian > 0 {
                    line += String(format: "  → %+.1f ns, %.3f×", Percentiles(values).p50 - baseMedian, Percentiles(values).p50 / baseMedian)
                }
                print(line)
            }
        }
        print("  goal (issue 23): the watched loop's loss within noise; a bystander pays nothing")
    }

    /// One run of the loop under `mode`; its CPU ns per call.
    private func measure(_ mode: Mode, waitMs: Int, seconds: Int) throws -> Double? {
        // The bystander's agent watches a saturated loop of its own, started first.
        var other: BenchmarkFixture?
        if mode.otherIdle {
            other = try BenchmarkFixture(fixtures, ["idle"])
        } else if mode.bystander {
            other = try BenchmarkFixture(fixtures, ["loop", "--script", "saturate:\(seconds + 3)", "--gap", "0.1", "--exit-when-done"])
        }
        defer { _ = try? other?.finish() }
        var agent: Process?
        func startAgent(watching pid: Int32, for duration: Double, _ watch: [String]) throws {
            let process = Process()
            process.executableURL = agentBinary
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sbench-\(UUID().uuidString)").path
            process.arguments = ["--pid", "\(pid)", "--report-dir", dir, "--quiet", "--duration", "\(Int(duration.rounded(.up)))s"] + watch
            process.standardError = FileHandle.nullDevice
            try process.run()
            agent = process
        }
        defer {
            if let agent {
                agent.interrupt()
                agent.waitUntilExit()
            }
        }
        // The idle loop's agent settles first: counters opened, rested, tracepoints released.
        let settle = TracepointAnchors.releaseAfter + 2
        if mode.otherIdle, let other, let watch = mode.watch {
            try startAgent(watching: other.pid, for: settle + Double(seconds) + 2, watch)
            usleep(useconds_t(settle * 1e6))
        }
        let target = try BenchmarkFixture(fixtures, ["syscall-loop", "\(seconds)", "\(waitMs)"])
        defer { _ = try? target.finish() }
        if !mode.otherIdle, let watch = mode.watch {
            try startAgent(watching: other?.pid ?? target.pid, for: Double(seconds) + 2, watch)
        }
        guard let line = target.waitForLine(prefix: "syscalls=", timeout: Double(seconds) + 15) else { return nil }
        return MonitorBenchmark.field(line, "cpu_ns_per_call")
    }
}
