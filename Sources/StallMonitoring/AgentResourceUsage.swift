import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The agent's own cost, as the exit summary, the metrics and the benchmarks report it.
public enum AgentResourceUsage {
    /// User + system CPU seconds so far (getrusage), and the peak resident set of this
    /// program's own address space (VmHWM). Not getrusage's ru_maxrss: Linux carries it across
    /// exec, so an agent started by a big process (the benchmark harness, a test runner)
    /// reported its parent's peak.
    package static func cpuAndPeak() -> (cpuSeconds: Double, peakResidentBytes: Int) {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpu =
            Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        return (cpu, peakResidentBytes() ?? usage.ru_maxrss * 1024)
    }

    /// "VmHWM:   26500 kB" from /proc/PID/status (`self` by default): a process's own peak
    /// resident set, which the benchmarks poll for their children too (see `cpuAndPeak`).
    public static func peakResidentBytes(pid: String = "self") -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kib = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        return kib * 1024
    }

    /// The current resident set from /proc/self/statm (getrusage gives only the peak).
    public static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
