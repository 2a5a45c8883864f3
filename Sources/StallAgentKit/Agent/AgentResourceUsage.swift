import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The agent's own cost, as the exit summary, the metrics and the benchmarks report it.
enum AgentResourceUsage {
    /// User + system CPU seconds so far, and the peak resident set (getrusage).
    static func cpuAndPeak() -> (cpuSeconds: Double, peakResidentBytes: Int) {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        return (cpu, usage.ru_maxrss * 1024)
    }

    /// The current resident set from /proc/self/statm (getrusage gives only the peak).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
