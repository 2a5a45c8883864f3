import CPosix

#if canImport(Glibc)
import Glibc
#endif

/// Lets the agent sleep while a watched thread sleeps in its loop's wait, and wakes it the
/// moment the thread leaves that wait (issue 14: an idle watch without periodic wake-ups).
///
/// A perf event recording the one thread's context switches, disabled except while the agent
/// sleeps. The thread is asleep inside its wait when the event is armed, so its first
/// switch-in is that wait returning: poll(2) on `fd` then reports POLLIN, and POLLHUP when the
/// thread exits. Not a system-call tracepoint, which would tax every system call on the host
/// (docs/architecture.md, "What the tracepoints cost the host"). Needs perf_event_open on the
/// thread (root, CAP_PERFMON, or perf_event_paranoid ≤ 2 for one's own processes); without it
/// the probe keeps its fixed interval.
public final class LoopWaker {
    public let fd: Int32
    private let ring: UnsafeMutableRawPointer?
    private(set) var armed = false

    public init(tid: Int32) throws {
        var ring: UnsafeMutableRawPointer?
        let fd = sa_perf_waker_open(tid, &ring)
        if fd < 0 {
            let error = errno
            if error == EMFILE || error == ENFILE { throw LoopTurnCounter.Unavailable.outOfDescriptors }
            throw LoopTurnCounter.Unavailable.failed("context-switch records: \(String(cString: strerror(error)))")
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

    /// Whether this agent may open the event on its own threads (what tests ask before
    /// expecting idle wake-ups).
    public static var available: Bool {
        (try? LoopWaker(tid: getpid())) != nil
    }
}
