import CPtrace

import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// The cheapest possible look at a running thread — stay attached, then INTERRUPT, wait,
/// GETREGS, CONT — measured so benchmarks can compare a real capture against it. Not used
/// for monitoring: staying attached freezes the target on every signal it receives.
public final class PtraceFloorProbe {
    public let tid: Int32
    private var attached = false
    private var buffer: [UInt8] = []

    public init(tid: Int32) throws {
        self.tid = tid
        guard sa_ptrace_seize(tid, 0) == 0 else {
            throw StallAgentError.system(operation: "PTRACE_SEIZE", errno: errno)
        }
        attached = true
    }

    deinit { detach() }

    /// One interrupt-to-continue cycle; returns (start, end) monotonic nanoseconds.
    /// `copyingStack` bytes from the stack pointer are read while stopped, as a capture must.
    /// `spinningNanos` keeps the thread stopped that much longer doing nothing: what any work
    /// in the stop costs the target beyond the work itself.
    public func cycle(deadlineNanos: UInt64 = 500_000_000, copyingStack: Int = 0, spinningNanos: UInt64 = 0) throws -> (UInt64, UInt64) {
        let start = MonotonicTime.nanos()
        guard sa_ptrace_interrupt(tid) == 0 else { throw StallAgentError.system(operation: "PTRACE_INTERRUPT", errno: errno) }
        let status = try Self.awaitStop(tid: tid, start: start, deadlineNanos: deadlineNanos)
        var regs = user_regs_struct()
        _ = sa_ptrace_getregs(tid, &regs)
        if copyingStack > 0 {
            if buffer.count < copyingStack { buffer = [UInt8](repeating: 0, count: copyingStack) }
            buffer.withUnsafeMutableBytes {
                _ = TargetMemory.read(pid: tid, address: regs.rsp, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<copyingStack]))
            }
        }
        if spinningNanos > 0 {
            let until = MonotonicTime.nanos() + spinningNanos
            while MonotonicTime.nanos() < until {}
        }
        _ = sa_ptrace_cont(tid, ThreadCapturer.signalToDeliver(stopStatus: status))
        return (start, MonotonicTime.nanos())
    }

    /// SEIZE, INTERRUPT, wait, GETREGS, DETACH — the floor's cycle with an attach and a
    /// detach around it and nothing else, to tell what attaching per capture costs the thread.
    public static func seizedCycle(tid: Int32, deadlineNanos: UInt64 = 500_000_000) throws -> (UInt64, UInt64) {
        guard sa_ptrace_seize(tid, 0) == 0 else { throw StallAgentError.system(operation: "PTRACE_SEIZE", errno: errno) }
        let start = MonotonicTime.nanos()
        guard sa_ptrace_interrupt(tid) == 0 else {
            let code = errno
            _ = sa_ptrace_detach(tid, 0)
            throw StallAgentError.system(operation: "PTRACE_INTERRUPT", errno: code)
        }
        // Left seized and interrupted on a timeout, as `cycle` leaves it: benchmarks only.
        let status = try awaitStop(tid: tid, start: start, deadlineNanos: deadlineNanos)
        var regs = user_regs_struct()
        _ = sa_ptrace_getregs(tid, &regs)
        _ = sa_ptrace_detach(tid, ThreadCapturer.signalToDeliver(stopStatus: status))
        return (start, MonotonicTime.nanos())
    }

    /// Spins (sched_yield) until the interrupted thread reports its stop; its wait status.
    private static func awaitStop(tid: Int32, start: UInt64, deadlineNanos: UInt64) throws -> Int32 {
        var status: Int32 = 0
        while sa_waitpid_nohang(tid, &status) != tid {
            if MonotonicTime.nanos() - start > deadlineNanos {
                throw StallAgentError.captureTimedOut(tid: tid, milliseconds: Int(deadlineNanos / 1_000_000))
            }
            sched_yield()
        }
        return status
    }

    public func detach() {
        guard attached else { return }
        attached = false
        // Detach needs a stopped tracee: interrupt, wait briefly, detach.
        if sa_ptrace_interrupt(tid) == 0 {
            var status: Int32 = 0
            let start = MonotonicTime.nanos()
            while sa_waitpid_nohang(tid, &status) != tid && MonotonicTime.nanos() - start < 500_000_000 {
                sched_yield()
            }
        }
        _ = sa_ptrace_detach(tid, 0)
    }
}
