import CTestSupport
import Foundation
@testable import StallProc

#if canImport(Glibc)
import Glibc
#endif

/// The receiving end of sd_notify or journal datagrams, bound in a temporary directory.
final class DatagramReceiver {
    let path: String
    let fd: Int32

    init(name: String = "sock") throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dgram-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        path = directory + "/" + name
        fd = sa_bind_unix_datagram(path)
        if fd < 0 { throw StallAgentError.system(operation: "bind \(path)", errno: errno) }
    }

    deinit {
        close(fd)
        unlink(path)
        rmdir((path as NSString).deletingLastPathComponent)
    }

    /// One datagram, or nil after `timeout` seconds.
    func receive(timeout: Double) -> [UInt8]? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n >= 0 ? Array(buffer[0..<n]) : nil
    }

    /// Every datagram until `timeout` passes with none.
    func drain(quietFor timeout: Double) -> [[UInt8]] {
        var all: [[UInt8]] = []
        while let next = receive(timeout: timeout) { all.append(next) }
        return all
    }
}
