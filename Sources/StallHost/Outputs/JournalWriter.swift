import CPosix
import Foundation

import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// Logs to the systemd journal over its native protocol (systemd.journal-fields(7),
/// "Native Journal Protocol"): one datagram of fields to /run/systemd/journal/socket, so an
/// entry carries structured STALLAGENT_* fields operators can filter on, not just text.
public final class JournalWriter {
    public static let defaultSocketPath = "/run/systemd/journal/socket"

    public let socketPath: String
    private let fd: Int32

    public init(socketPath: String = JournalWriter.defaultSocketPath) throws {
        self.socketPath = socketPath
        var info = stat()
        guard stat(socketPath, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else {
            throw StallAgentError.system(operation: "journal socket \(socketPath)", errno: ENOENT)
        }
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if fd < 0 { throw StallAgentError.system(operation: "socket", errno: errno) }
        // Big entries go in one datagram when the socket allows (journald raises its own
        // receive buffer; ours only needs to send).
        var size: Int32 = 8 * 1024 * 1024
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(fd) }

    /// True when stderr is connected to the journal (systemd sets `JOURNAL_STREAM` to the
    /// stream's "device:inode"); a redirected stderr of a child of the service does not match.
    public static func stderrIsJournal(environment: [String: String]) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(STDERR_FILENO, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    /// The wire form of one entry. A value with a newline uses the binary form
    /// (`KEY\n` + little-endian u64 length + bytes + `\n`); field names are assumed valid.
    public static func encode(_ fields: [(String, String)]) -> [UInt8] {
        var bytes: [UInt8] = []
        for (key, value) in fields {
            bytes += Array(key.utf8)
            let utf8 = Array(value.utf8)
            if utf8.contains(UInt8(ascii: "\n")) {
                bytes.append(UInt8(ascii: "\n"))
                var length = UInt64(utf8.count).littleEndian
                withUnsafeBytes(of: &length) { bytes += Array($0) }
                bytes += utf8
            } else {
                bytes.append(UInt8(ascii: "="))
                bytes += utf8
            }
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }

    /// Decodes what `encode` writes (for tests and for reading entries back).
    public static func decode(_ bytes: [UInt8]) -> [(String, String)]? {
        var fields: [(String, String)] = []
        var i = 0
        while i < bytes.count {
            guard let end = bytes[i...].firstIndex(where: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "=") })
            else { return nil }
            let key = String(decoding: bytes[i..<end], as: UTF8.self)
            if bytes[end] == UInt8(ascii: "=") {
                guard let newline = bytes[(end + 1)...].firstIndex(of: UInt8(ascii: "\n")) else { return nil }
                fields.append((key, String(decoding: bytes[(end + 1)..<newline], as: UTF8.self)))
                i = newline + 1
            } else {
                guard end + 9 <= bytes.count else { return nil }
                var length: UInt64 = 0
                for k in 0..<8 { length |= UInt64(bytes[end + 1 + k]) << (8 * UInt64(k)) }
                let start = end + 9
                guard length <= UInt64(bytes.count - start), start + Int(length) < bytes.count,
                    bytes[start + Int(length)] == UInt8(ascii: "\n")
                else { return nil }
                fields.append((key, String(decoding: bytes[start..<(start + Int(length))], as: UTF8.self)))
                i = start + Int(length) + 1
            }
        }
        return fields
    }

    /// Sends one entry. Too big for a datagram (EMSGSIZE): the entry goes in a sealed memfd
    /// whose descriptor is passed instead, as sd_journal_send does.
    public func send(_ fields: [(String, String)]) throws {
        let payload = JournalWriter.encode(fields)
        var rc = payload.withUnsafeBytes { sa_send_unix_datagram(fd, socketPath, $0.baseAddress, $0.count, -1) }
        if rc == EMSGSIZE || rc == ENOBUFS {
            let memfd = payload.withUnsafeBytes { sa_sealed_memfd("stallagent-journal", $0.baseAddress, $0.count) }
            guard memfd >= 0 else { throw StallAgentError.system(operation: "memfd for a journal entry", errno: errno) }
            defer { close(memfd) }
            rc = sa_send_unix_datagram(fd, socketPath, nil, 0, memfd)
        }
        if rc != 0 { throw StallAgentError.system(operation: "send to \(socketPath)", errno: rc) }
    }
}
