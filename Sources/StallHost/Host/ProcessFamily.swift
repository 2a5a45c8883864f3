import Foundation

import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// Where the processes of a target watched as a whole come from: a unit's cgroup, or the
/// children of the processes already watched (`--follow-children`). The host agent asks in
/// every round where a watched thread was awake, so the per-round questions read one small
/// file per cgroup or per process through a descriptor kept open (`pread` at offset 0 gives the current list: measured on
/// `cgroup.procs` of the v1 `name=systemd` hierarchy and on `/proc/PID/task/TID/children`);
/// the wider scans (sub-cgroups, children forked by threads other than the main one) open
/// afresh once a second.
final class ProcessFamily {
    /// How often the wider scans run.
    static let fullScanInterval = 1.0
    /// How often the wider scan also looks at processes whose main thread slept throughout.
    static let sleeperScanInterval = 10.0

    private var files: [String: Int32] = [:]
    private var buffer = [UInt8](repeating: 0, count: 4096)

    deinit {
        for fd in files.values { close(fd) }
    }

    /// The processes listed in the unit's cgroup — with `recursive`, in its sub-cgroups too (a
    /// delegated service keeps workers there). nil when the cgroup is gone: the unit stopped.
    func cgroupProcesses(_ cgroup: String, recursive: Bool) -> [Int32]? {
        let path = cgroup + "/cgroup.procs"
        if recursive {
            // Reopened: a file replaced rather than rewritten (a cgroup tree that is not
            // cgroupfs) is seen at least once a second.
            forget(path)
            guard UnitCgroups.isDirectory(cgroup) else { return nil }
            return UnitCgroups.processes(in: cgroup)
        }
        return read(path).map(Self.pids)
    }

    /// The children of `pid`: those its main thread forked, or with `allThreads` those of every
    /// thread (one `children` file per thread).
    func children(of pid: Int32, allThreads: Bool) -> [Int32] {
        guard allThreads else { return read("/proc/\(pid)/task/\(pid)/children").map(Self.pids) ?? [] }
        let threads = (try? ProcFS.threadIDs(pid: pid)) ?? [pid]
        return threads.flatMap { tid in
            ((try? ProcFS.readText("/proc/\(pid)/task/\(tid)/children", pid: pid)) ?? "").split(whereSeparator: \.isWhitespace)
                .compactMap { Int32($0) }
        }
    }

    /// Closes what was kept open for a process no longer watched (its pid may be reused).
    func forget(pid: Int32) { forget("/proc/\(pid)/task/\(pid)/children") }

    private func forget(_ path: String) {
        if let fd = files.removeValue(forKey: path) { close(fd) }
    }

    private static func pids(_ text: String) -> [Int32] {
        text.split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }
    }

    /// The whole file, read with `pread` from a descriptor opened on first use; nil (and closed)
    /// when it cannot be opened or read — a removed cgroup answers ENODEV, a gone process ESRCH.
    private func read(_ path: String) -> String? {
        var fd = files[path] ?? -1
        if fd < 0 {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            files[path] = fd
        }
        var bytes: [UInt8] = []
        while true {
            let count = bytes.count
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(count)) }
            if n < 0 {
                if errno == EINTR { continue }
                forget(path)
                return nil
            }
            if n == 0 { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
