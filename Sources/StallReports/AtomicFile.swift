import Foundation

import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// Replaces files whole: each is written to a temporary file in the same directory, synced,
/// then renamed over its name, so a reader (node_exporter's textfile collector, the next
/// agent start, someone tailing reports) sees the old content or the new, never a torn one.
/// On failure the old file is left as it was.
public enum AtomicFile {
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws {
        let temp = try stage(bytes, nextTo: path, mode: mode)
        if rename(temp, path) != 0 {
            let code = errno
            unlink(temp)
            throw StallAgentError.system(operation: "rename to \(path)", errno: code)
        }
    }

    /// Writes `bytes` to a new temporary file in the directory `directoryFD`, named after
    /// `name`, and syncs it; returns the temporary name (relative to the directory) for the
    /// caller to `renameat`. The file is created with O_EXCL | O_NOFOLLOW relative to a
    /// directory opened once, so no path component can be swapped meanwhile.
    public static func stage(_ bytes: some ContiguousBytes, directoryFD: Int32, name: String, mode: mode_t) throws -> String {
        var temp = ""
        var fd: Int32 = -1
        for _ in 0..<8 {
            temp = "." + name + ".tmp-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
            fd = openat(directoryFD, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            if fd >= 0 || errno != EEXIST { break }
        }
        guard fd >= 0 else { throw StallAgentError.system(operation: "create \(temp)", errno: errno) }
        if let failure = writeAll(bytes, fd: fd, name: name) {
            unlinkat(directoryFD, temp, 0)
            throw failure
        }
        return temp
    }

    /// Writes, syncs and closes `fd`; the error, if any.
    private static func writeAll(_ bytes: some ContiguousBytes, fd: Int32, name: String) -> StallAgentError? {
        var failure: StallAgentError?
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = .system(operation: "write \(name)", errno: errno)
                    return
                }
                offset += n
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = .system(operation: "fsync \(name)", errno: errno) }
        if close(fd) != 0, failure == nil { failure = .system(operation: "close \(name)", errno: errno) }
        return failure
    }

    /// Writes `bytes` to a new temporary file beside `path` and syncs it; returns its name for
    /// the caller to rename (several files can be staged before any is renamed).
    /// O_EXCL | O_NOFOLLOW: never write through a name someone else prepared.
    public static func stage(_ bytes: some ContiguousBytes, nextTo path: String, mode: mode_t = 0o644) throws -> String {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        var temp = ""
        var fd: Int32 = -1
        for _ in 0..<8 {
            temp = (directory.isEmpty ? "." : directory) + "/." + name + ".tmp-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
            fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            if fd >= 0 || errno != EEXIST { break }
        }
        guard fd >= 0 else { throw StallAgentError.system(operation: "create \(temp)", errno: errno) }
        // writeAll's close can report a deferred write error (NFS, quotas): the file is not known good.
        let failure = writeAll(bytes, fd: fd, name: path)
        if let failure {
            unlink(temp)
            throw failure
        }
        return temp
    }
}
