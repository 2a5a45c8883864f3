import CPosix

#if canImport(Glibc)
import Glibc
#endif

/// Lets the agent sleep while a watched thread sleeps in its loop's wait, and wakes it the
/// moment the thread leaves that wait (issue 14: an idle watch without periodic wake-ups).
///
/// A sampling event on `raw_syscalls:sys_exit` for the one thread, disabled except while the
/// agent sleeps. The thread is asleep inside its wait when the event is armed, so the first
/// system-call exit it records is that wait returning: poll(2) on `fd` then reports POLLIN,
/// and POLLHUP when the thread exits. Needs what the loop-turn counters need (tracefs and
/// CAP_PERFMON or root); without it the probe keeps its fixed interval.
public final class LoopWaker {
    public let fd: Int32
    private let ring: UnsafeMutableRawPointer?
    private(set) var armed = false

    public init(tid: Int32) throws {
        let id = try LoopWaker.exitTracepointID()
        TracepointAnchors.hold([id])
        var ring: UnsafeMutableRawPointer?
        let fd = sa_perf_waker_open(id, tid, &ring)
        if fd < 0 {
            let error = errno
            throw LoopTurnCounter.Unavailable.failed("raw_syscalls:sys_exit: \(String(cString: strerror(error)))")
        }
        self.fd = fd
        self.ring = ring
    }

    deinit { sa_perf_waker_close(fd, ring) }

    /// Enables the event; false if the kernel refused (the caller then keeps probing).
    public func arm() -> Bool {
        guard let ring else { return false }
        armed = sa_perf_waker_arm(fd, ring) == 0
        return armed
    }

    /// When the thread left its wait (monotonic seconds), if it did since the last `arm`.
    public func firstExit() -> Double? {
        guard let ring else { return nil }
        var nanos: UInt64 = 0
        guard sa_perf_waker_first_exit(ring, &nanos) == 0, nanos > 0 else { return nil }
        return Double(nanos) / 1e9
    }

    public func disarm() {
        if armed { _ = sa_perf_waker_disarm(fd) }
        armed = false
    }

    private static let cachedID: Result<UInt64, LoopTurnCounter.Unavailable> = Result {
        guard let id = LoopTurnCounter.tracepointID("raw_syscalls/sys_exit", root: try LoopTurnCounter.tracefsRoot())
        else { throw LoopTurnCounter.Unavailable.noTracepoints }
        return id
    }.mapError { $0 as? LoopTurnCounter.Unavailable ?? .failed("\($0)") }

    static func exitTracepointID() throws -> UInt64 { try cachedID.get() }
}
