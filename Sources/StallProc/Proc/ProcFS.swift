#if canImport(Glibc)
import Glibc
#endif

/// Reading `/proc`. Files there report size 0, so they are read until EOF; errors map to
/// the user-facing `StallAgentError`s so callers can tell "gone" from "not allowed".
public enum ProcFS {
    /// Reads a whole /proc (or any) file as text.
    public static func readText(_ path: String, pid: Int32 = 0) throws -> String {
        let bytes = try readBytes(path, pid: pid)
        return String(decoding: bytes, as: UTF8.self)
    }

    public static func readBytes(_ path: String, pid: Int32 = 0, limit: Int = 64 << 20) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw error(errno, operation: "read \(path)", pid: pid) }
        defer { close(fd) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while result.count < limit {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw error(errno, operation: "read \(path)", pid: pid)
            }
            if n == 0 { break }
            result.append(contentsOf: chunk[0..<n])
        }
        return result
    }

    public static func readLink(_ path: String, pid: Int32 = 0) throws -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink(path, &buffer, buffer.count - 1)
        if n < 0 { throw error(errno, operation: "readlink \(path)", pid: pid) }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Thread ids of a process, main thread first.
    public static func threadIDs(pid: Int32) throws -> [Int32] {
        try numericEntries(in: "/proc/\(pid)/task", pid: pid)
            .sorted { a, b in a == pid ? true : (b == pid ? false : a < b) }
    }

    /// The numeric names in a /proc directory: pids in /proc, tids in /proc/PID/task.
    public static func numericEntries(in path: String, pid: Int32 = 0) throws -> [Int32] {
        guard let dir = opendir(path) else { throw error(errno, operation: "list \(path)", pid: pid) }
        defer { closedir(dir) }
        var numbers: [Int32] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if let number = Int32(name) { numbers.append(number) }
        }
        return numbers
    }

    public static func exists(pid: Int32) -> Bool {
        access("/proc/\(pid)", F_OK) == 0
    }

    /// Maps errno to the error a user can act on.
    public static func error(_ code: Int32, operation: String, pid: Int32) -> StallAgentError {
        switch code {
        case ENOENT, ESRCH: return .noSuchProcess(pid: pid)
        case EACCES, EPERM: return .permissionDenied(pid: pid, operation: operation)
        default: return .system(operation: operation, errno: code)
        }
    }
}
