import CPosix

#if canImport(Glibc)
import Glibc
#endif

/// sd_notify(3) without libsystemd: one datagram of newline-separated `KEY=VALUE` lines to
/// `$NOTIFY_SOCKET`. Does nothing when the agent is not run by systemd with `Type=notify`.
///
/// The watchdog is fed only by `progress(at:)`, which the monitor loop calls after each round
/// in which every target was probed: a loop stuck in a capture or a hung /proc read stops the
/// pings and systemd restarts the agent, which is the point of a watchdog for a watchdog.
public final class ServiceNotifier {
    public let socketPath: String?
    /// Half of WATCHDOG_USEC (systemd's advice), when the watchdog is meant for this process.
    public let watchdogInterval: Double?
    private let fd: Int32
    private var lastPing = -Double.infinity
    private var lastStatus: String?
    /// STATUS= before READY=1 would be noise, and after STOPPING=1 it would overwrite "stopping".
    private var phase = 0

    public init(environment: [String: String]) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path
        if let text = environment["WATCHDOG_USEC"], let micros = UInt64(text), micros > 0,
            environment["WATCHDOG_PID"].map({ Int32($0) == getpid() }) ?? true
        {
            watchdogInterval = Double(micros) / 2e6
        } else {
            watchdogInterval = nil
        }
        fd = path == nil ? -1 : socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    }

    deinit { if fd >= 0 { close(fd) } }

    /// The environment for a child the agent starts: without the notify socket, the watchdog
    /// and the socket-activation variables, which are systemd's contract with the agent alone.
    /// A child that inherited them would notify as the agent (systemctl sends ERRNO= when it
    /// fails) or be taken for it.
    public static func childEnvironment(_ environment: [String: String]) -> [String: String] {
        environment.filter { key, _ in
            key != "NOTIFY_SOCKET" && !key.hasPrefix("WATCHDOG_") && !key.hasPrefix("LISTEN_")
        }
    }

    public var isActive: Bool { fd >= 0 }

    /// Sends `lines` as one notification. Returns 0 or the errno of the failed send.
    @discardableResult
    public func notify(_ lines: [String]) -> Int32 {
        guard let socketPath, fd >= 0 else { return 0 }
        let payload = Array(lines.joined(separator: "\n").utf8)
        return payload.withUnsafeBytes { sa_send_unix_datagram(fd, socketPath, $0.baseAddress, $0.count, -1) }
    }

    public func ready(status: String) {
        phase = 1
        lastStatus = status
        notify(["READY=1", "STATUS=" + status, "MAINPID=\(getpid())"])
    }

    /// Sends STATUS= only when it changed: systemctl status shows the latest.
    public func status(_ text: String) {
        guard phase == 1, text != lastStatus else { return }
        lastStatus = text
        notify(["STATUS=" + text])
    }

    /// Called by the monitor loop when it made progress; pings at most every half period.
    /// When the next WATCHDOG=1 is due; nil without a watchdog. An agent that sleeps until a
    /// watched thread wakes must wake by then.
    public var nextPingDue: Double? { watchdogInterval.map { lastPing + $0 } }

    public func progress(at now: Double) {
        guard let interval = watchdogInterval, now - lastPing >= interval else { return }
        lastPing = now
        notify(["WATCHDOG=1"])
    }

    public func stopping() {
        phase = 2
        notify(["STOPPING=1", "STATUS=stopping"])
    }
}
