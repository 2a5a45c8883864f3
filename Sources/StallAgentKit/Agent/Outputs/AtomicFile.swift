import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Replaces a file whole: a temporary file in the same directory, synced, then renamed over
/// the name, so a reader (node_exporter's textfile collector, the next agent start) sees the
/// old content or the new, never a torn one. On failure the old file is left as it was.
public enum AtomicFile {
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let temp = (directory.isEmpty ? "." : directory) + "/.\(name).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw StallAgentError.system(operation: "create \(temp)", errno: errno) }
        var failure: StallAgentError?
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = .system(operation: "write \(path)", errno: errno)
                    return
                }
                offset += n
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = .system(operation: "fsync \(path)", errno: errno) }
        if close(fd) != 0, failure == nil { failure = .system(operation: "close \(path)", errno: errno) }
        if failure == nil, rename(temp, path) != 0 { failure = .system(operation: "rename to \(path)", errno: errno) }
        if let failure {
            unlink(temp)
            throw failure
        }
    }
}
