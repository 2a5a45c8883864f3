import CTestSupport
import Foundation
import Testing
@testable import StallMonitoring

#if canImport(Glibc)
import Glibc
#endif

@Suite struct ServiceNotifierTests {
    @Test func sendsReadyStatusAndWatchdogToTheNotifySocket() throws {
        let receiver = try DatagramReceiver()
        let notifier = ServiceNotifier(environment: ["NOTIFY_SOCKET": receiver.path, "WATCHDOG_USEC": "2000000"])
        #expect(notifier.isActive)
        #expect(notifier.watchdogInterval == 1.0)
        notifier.status("starting")  // before READY=1: not sent
        notifier.ready(status: "watching x")
        let ready = String(decoding: try #require(receiver.receive(timeout: 2)), as: UTF8.self)
        #expect(ready.split(separator: "\n").contains("READY=1"))
        #expect(ready.contains("STATUS=watching x"))
        notifier.status("watching x")  // unchanged: not sent again
        notifier.status("watching y")
        #expect(String(decoding: try #require(receiver.receive(timeout: 2)), as: UTF8.self) == "STATUS=watching y")
        notifier.progress(at: 10)
        notifier.progress(at: 10.5)  // within half the watchdog period: no second ping
        notifier.progress(at: 11.1)
        let pings = receiver.drain(quietFor: 0.3).map { String(decoding: $0, as: UTF8.self) }
        #expect(pings == ["WATCHDOG=1", "WATCHDOG=1"])
    }

    @Test func abstractSocketsAndForeignWatchdogs() throws {
        let name = "@stallagent-test-\(UUID().uuidString.prefix(8))"
        let fd = sa_bind_unix_datagram(name)
        try #require(fd >= 0)
        defer { close(fd) }
        // WATCHDOG_PID names another process: the watchdog is not ours to feed.
        let notifier = ServiceNotifier(environment: ["NOTIFY_SOCKET": name, "WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"])
        #expect(notifier.watchdogInterval == nil)
        #expect(notifier.notify(["READY=1"]) == 0)
        var buffer = [UInt8](repeating: 0, count: 64)
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        #expect(poll(&poller, 1, 2000) == 1)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        #expect(String(decoding: buffer[0..<max(0, n)], as: UTF8.self) == "READY=1")
    }

    @Test func withoutNotifySocketNothingIsSent() {
        let notifier = ServiceNotifier(environment: [:])
        #expect(!notifier.isActive)
        #expect(notifier.notify(["READY=1"]) == 0)
    }
}
