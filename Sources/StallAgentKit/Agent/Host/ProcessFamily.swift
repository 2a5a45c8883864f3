import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where the processes of a target watched as a whole come from: a unit's cgroup, or the
/// children of the processes already watched (`--follow-children`). The host agent asks every
/// probe round, so each question reads one small file per cgroup or per process; the wider
/// scans (sub-cgroups, children forked by threads other than the main one) run once a second.
enum ProcessFamily {
    /// How often the wider scans run.
    static let fullScanInterval = 1.0

    /// The processes listed in the unit's cgroup — with `recursive`, in its sub-cgroups too (a
    /// delegated service keeps workers there). nil when the cgroup is gone: the unit stopped.
    static func cgroupProcesses(_ cgroup: String, recursive: Bool) -> [Int32]? {
        if recursive {
            guard UnitCgroups.isDirectory(cgroup) else { return nil }
            return UnitCgroups.processes(in: cgroup)
        }
        guard let text = try? ProcFS.readText(cgroup + "/cgroup.procs") else { return nil }
        return text.split(separator: "\n").compactMap { Int32($0) }
    }

    /// The children of `pid`: those its main thread forked, or with `allThreads` those of every
    /// thread (`/proc/PID/task/TID/children`, one file per thread).
    static func children(of pid: Int32, allThreads: Bool) -> [Int32] {
        let threads = allThreads ? ((try? ProcFS.threadIDs(pid: pid)) ?? [pid]) : [pid]
        var result: [Int32] = []
        for tid in threads {
            guard let text = try? ProcFS.readText("/proc/\(pid)/task/\(tid)/children", pid: pid) else { continue }
            result += text.split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
        return result
    }
}
