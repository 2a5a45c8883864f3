import Foundation

import StallMonitoring
import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// Reads a pidfile as systemd does before trusting it: the agent often runs as root and may
/// kill (`--kill-after`) the process a pidfile names, so a file an unprivileged user could
/// write must not choose that process. Trusted: a regular file, not a link, owned by root or
/// the agent's own user, writable by no one else, in a directory no one else may replace it
/// in; and naming a process that was already running when the file was last written (a
/// stale file whose pid was reused names a younger process).
enum PidfileTrust {
    enum Verdict: Equatable {
        case trusted(Int32)
        case refused(String)
    }

    /// Clock ticks and the boot time bound a process's start to about a second.
    static let startTolerance = 2.0

    static func read(_ path: String) -> Verdict {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 {
            let code = errno
            if code == ELOOP { return .refused("pidfile \(path) is a symbolic link: not trusted") }
            return .refused("pidfile \(path) does not exist or cannot be read")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            return .refused("pidfile \(path) is not a regular file: not trusted")
        }
        if info.st_uid != 0 && info.st_uid != geteuid() {
            return .refused("pidfile \(path) is owned by uid \(info.st_uid), not root or the agent's user: not trusted")
        }
        if info.st_mode & 0o022 != 0 {
            return .refused("pidfile \(path) is writable by its group or others: not trusted")
        }
        let directory = (path as NSString).deletingLastPathComponent
        var parent = stat()
        if stat(directory.isEmpty ? "." : directory, &parent) == 0, parent.st_mode & 0o002 != 0, parent.st_mode & UInt32(S_ISVTX) == 0 {
            return .refused("pidfile \(path) is in \(directory), which anyone may write: not trusted")
        }
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        let text = String(decoding: bytes.prefix(max(0, count)), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let pid = Int32(text), pid > 0 else {
            return .refused("pidfile \(path) holds '\(text.prefix(20))', not a process id")
        }
        guard TargetResolver.isLiveProcess(pid) else {
            let others = ProcessInspector.liveThreads(of: pid).count
            if others > 0 {
                return .refused(
                    "pidfile \(path) names process \(pid), whose \(StallAgentError.mainThreadExitedPhrase(threads: others)): "
                        + "no main thread to watch")
            }
            return .refused("pidfile \(path) names process \(pid), which is not running")
        }
        let written = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        if let age = StallMonitor.processAge(pid: pid), Date().timeIntervalSince1970 - age > written + startTolerance {
            return .refused(
                "pidfile \(path) names process \(pid), which started after the file was written: a stale pidfile whose pid was reused")
        }
        return .trusted(pid)
    }
}
