import Foundation
import StallProc
import StallMonitoring

#if canImport(Glibc)
import Glibc
#endif

/// `stallagent bench --wrapper-only`: what wrapping costs a healthy CI job (issue 13): wall
/// time of `stallagent -- COMMAND` against COMMAND alone, alternating A/B in one run, for
/// 2000 short processes, `make -j2` of a small C project and a 60-test pytest run, plus the
/// agent's peak RSS (VmHWM).
public final class WrapperBenchmark {
    public let agentBinary: URL
    public var log: (String) -> Void = {
        print($0)
        fflush(nil)
    }
    private let work: URL

    public init(agentBinary: URL) {
        self.agentBinary = agentBinary
        work = FileManager.default.temporaryDirectory.appendingPathComponent("wbench-\(UUID().uuidString)")
    }

    struct Workload {
        var name: String
        var command: [String]
        var prepare: () throws -> Void = {}
    }

    /// One run (`TimedChild`, 1 ms poll): wall seconds and, when wrapped, the agent's VmHWM in
    /// bytes (polled every 20 ms: the high-water mark only grows, so the last read before exit
    /// is the peak within 20 ms). Also the agent's own CPU seconds (utime + stime of the agent
    /// process alone, children excluded, polled the same way): on a shared machine wall time
    /// swings with other jobs' bursts, the agent's CPU does not. Both sides read the child's
    /// /proc files alike, so the bench's own polling loads them equally.
    private func runOnce(_ command: [String], wrapped: Bool) throws -> (seconds: Double, peak: UInt64?, cpu: Double?) {
        let reports = work.appendingPathComponent("reports").path
        let arguments = wrapped ? [agentBinary.path, "--report-dir", reports, "--"] + command : ["/usr/bin/env"] + command
        var peak: UInt64?
        var cpu: Double?
        var lastPoll: UInt64 = 0
        let (wall, _) = try TimedChild.run(arguments, directory: work.path, pollMicros: 1000) { pid in
            let now = MonotonicTime.nanos()
            guard now - lastPoll >= 20_000_000 else { return }
            lastPoll = now
            let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
            let hwm = AgentResourceUsage.peakResidentBytes(pid: "\(pid)")
            guard wrapped else { return }
            if let stat, let close = stat.lastIndex(of: ")") {
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                // Fields after the name: state is [0], utime [11], stime [12].
                if fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) {
                    cpu = (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
                }
            }
            if let hwm { peak = max(peak ?? 0, UInt64(hwm)) }
        }
        return (Double(wall) / 1e9, peak, cpu)
    }

    /// A/B alternating, A first in even rounds and B first in odd ones, so drift in the machine's
    /// load hits both alike. Reports the median of the rounds' wrapped/unwrapped ratios.
    func measure(_ workload: Workload, rounds: Int) throws {
        try workload.prepare()
        _ = try runOnce(workload.command, wrapped: false)  // warm caches (page cache, pyc files)
        var wrapped: [Double] = []
        var plain: [Double] = []
        var peak: UInt64 = 0
        var agentShare: [Double] = []
        for round in 0..<rounds {
            for wrap in round % 2 == 0 ? [true, false] : [false, true] {
                let (seconds, hwm, cpu) = try runOnce(workload.command, wrapped: wrap)
                if wrap { wrapped.append(seconds) } else { plain.append(seconds) }
                peak = max(peak, hwm ?? 0)
                if let cpu, seconds > 0 { agentShare.append(cpu / seconds) }
            }
        }
        let a = Percentiles(wrapped).p50
        let b = Percentiles(plain).p50
        // Each round's two runs are neighbours in time: their ratio cancels the machine's drift
        // over the minute the rounds take, which a ratio of the two medians does not.
        let paired = zip(wrapped, plain).compactMap { $1 > 0 ? $0 / $1 : nil }.sorted()
        // A single round on this VM swings by ±10–20 % either way (identical unwrapped runs of
        // the make workload took 2.5–3.2 s): the interval says how far the median can be trusted.
        let interval = WrapperBenchmark.medianInterval(paired)
        log(
            String(
                format:
                    "  %@: wrapped %.3f s, unwrapped %.3f s (medians of %d) → %.3f× (median of the rounds' ratios; 90 %% CI %.3f–%.3f×, rounds %.3f–%.3f×; ratio of medians %.3f×)   agent CPU %.1f %% of the wrapped wall time   agent VmHWM %.1f MB",
                workload.name, a, b, rounds, Percentiles(paired).p50, interval.low, interval.high, paired.first ?? 0,
                paired.last ?? 0, b > 0 ? a / b : 0, 100 * Percentiles(agentShare).p50, Double(peak) / 1_048_576))
    }

    /// A distribution-free confidence interval for the median of `sorted` (at least 90 %): the
    /// order statistics k and n+1-k, with k the largest rank for which fewer than k of n values
    /// fall below the median with probability ≤ 5 % (binomial, p = ½): for 31 rounds, the 11th
    /// and the 21st (92.9 %).
    static func medianInterval(_ sorted: [Double]) -> (low: Double, high: Double) {
        let n = sorted.count
        guard n > 0 else { return (0, 0) }
        var k = 0
        var below = 0.0  // P(X ≤ k - 1) for X ~ Binomial(n, ½)
        var term = pow(0.5, Double(n))  // P(X = 0)
        while k < n / 2, below + term <= 0.05 {
            below += term
            term *= Double(n - k) / Double(k + 1)
            k += 1
        }
        // Ranks k and n+1-k (1-based); too few values for any such k: the whole range.
        let j = max(k, 1)
        return (sorted[j - 1], sorted[n - j])
    }

    /// ~80 C files of a few functions each and a Makefile, rebuilt from scratch each run.
    private func makeProject() throws {
        let dir = work.appendingPathComponent("cproject")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var objects: [String] = []
        for i in 0..<80 {
            var source = "#include <stdio.h>\n#include <string.h>\n"
            for f in 0..<12 {
                source += """
                    int f\(i)_\(f)(const char *s, int n) {
                        int acc = \(f);
                        for (int k = 0; k < n; k++) acc = acc * 31 + (int)strlen(s) + k;
                        if (acc % 7 == 0) printf("%d\\n", acc);
                        return acc;
                    }

                    """
            }
            try source.write(to: dir.appendingPathComponent("u\(i).c"), atomically: true, encoding: .utf8)
            objects.append("u\(i).o")
        }
        try "int main(void) { return 0; }\n".write(to: dir.appendingPathComponent("main.c"), atomically: true, encoding: .utf8)
        let makefile = """
            OBJS = main.o \(objects.joined(separator: " "))
            prog: $(OBJS)
            \t$(CC) -o $@ $(OBJS)
            %.o: %.c
            \t$(CC) -O1 -c $< -o $@
            clean:
            \trm -f prog *.o

            """
        try makefile.write(to: dir.appendingPathComponent("Makefile"), atomically: true, encoding: .utf8)
    }

    private func pytestSuite() throws {
        var source = "import json\n"
        for i in 0..<60 {
            source += "def test_fast_\(i)():\n    assert json.loads(json.dumps({'n': \(i)}))['n'] == \(i)\n"
        }
        try source.write(to: work.appendingPathComponent("test_fast.py"), atomically: true, encoding: .utf8)
    }

    private static func available(_ command: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    public func run(quick: Bool) throws {
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let rounds = quick ? 3 : 31
        log(
            "stallagent wrapper benchmark — \(ProcessInfo.processInfo.activeProcessorCount) CPUs, \(rounds) A/B rounds each"
                + "   goal: wrapped ≤ 1.03× unwrapped, agent VmHWM ≤ 50 MB")
        try measure(
            Workload(
                name: "2000 × /bin/true",
                command: ["/bin/sh", "-c", "i=0; while [ $i -lt 2000 ]; do /bin/true; i=$((i+1)); done"]), rounds: rounds)
        if Self.available(["make", "--version"]), Self.available(["cc", "--version"]) {
            try measure(
                Workload(
                    name: "make -j2 (81 C files)",
                    command: ["/bin/sh", "-c", "make -s -C cproject clean && make -s -j2 -C cproject"],
                    prepare: makeProject), rounds: rounds)
        } else {
            log("  make -j2: skipped (make or cc missing)")
        }
        if Self.available(["python3", "-c", "import pytest"]) {
            try measure(
                Workload(
                    name: "pytest, 60 fast tests",
                    command: ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_fast.py"],
                    prepare: pytestSuite), rounds: rounds)
        } else {
            log("  pytest: skipped (python3 cannot import pytest)")
        }
    }
}
