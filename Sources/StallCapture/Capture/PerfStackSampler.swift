import CPosix

import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// Samples a running thread without stopping it (DESIGN.md §3, issue 14): a per-thread
/// task-clock perf event copies the thread's user registers and the top of its stack at the
/// sample interrupt, in the kernel, about 16–20 µs of the thread's time per sample against
/// ≈ 40 µs for the bare ptrace stop — and no `t` state, no EINTR, nothing for gdb or strace to
/// trip over. Enabled only while the thread is busy; the agent takes the newest sample from
/// the ring when it wants one.
///
/// Needs perf_event_open on the target (root, CAP_PERFMON, or kernel.perf_event_paranoid ≤ 1
/// for one's own processes) and a ring that fits the perf mlock limit; the ptrace capture
/// stays the fallback.
public final class PerfStackSampler {
    public let tid: Int32
    private let fd: Int32
    private let ring: UnsafeMutableRawPointer?
    private let ringBytes: Int
    private var enabled = false
    private var stack: [UInt8]
    private var registers = [UInt64](repeating: 0, count: Int(SA_PERF_SAMPLE_REGISTERS))
    private let periodNanos: UInt64
    /// The thread's on-CPU time when it was first seen after the last sample (or enabling).
    private var cpuAtProgress: UInt64?

    /// The kernel copies at most 64 KiB of stack per sample (a u16 record size).
    public static let maxStackBytes = 65_528

    public init(tid: Int32, period: Double, stackBytes: Int) throws {
        let bytes = UInt32(min(max(stackBytes, 4096), PerfStackSampler.maxStackBytes))
        var ring: UnsafeMutableRawPointer?
        var ringBytes = 0
        let fd = sa_perf_stack_sampler_open(tid, UInt64(max(period, 0.001) * 1e9), bytes, &ring, &ringBytes)
        if fd < 0 { throw StallAgentError.invalidArgument("perf_event_open: \(String(cString: strerror(errno)))") }
        self.tid = tid
        self.fd = fd
        self.ring = ring
        self.ringBytes = ringBytes
        periodNanos = UInt64(max(period, 0.001) * 1e9)
        stack = [UInt8](repeating: 0, count: Int(bytes))
    }

    deinit { sa_perf_stack_sampler_close(fd, ring, ringBytes) }

    public func setEnabled(_ on: Bool) {
        guard on != enabled else { return }
        if on {
            _ = latest(pid: 0)  // forget samples from an earlier episode
            enabled = sa_perf_stack_sampler_enable(fd) == 0
            cpuAtProgress = nil
        } else {
            _ = sa_perf_stack_sampler_disable(fd)
            enabled = false
        }
    }

    public var isEnabled: Bool { enabled }

    /// Records arrived that `latest` has not consumed yet.
    public var hasPending: Bool { ring.map { sa_perf_stack_sampler_pending($0) != 0 } ?? false }

    /// True while a sample is still on its way: enabled, nothing pending, and the thread has had
    /// less than two periods of CPU time (`cpuNanos`, its schedstat clock) since it was enabled
    /// or last gave one — its first period, or a starved thread's small share of a busy CPU.
    public func awaitsSample(cpuNanos: UInt64) -> Bool {
        guard enabled, !hasPending else { return false }
        let since = cpuAtProgress ?? cpuNanos
        cpuAtProgress = since
        return cpuNanos &- since < 2 * periodNanos
    }

    /// The newest sample since the last call, as a snapshot the unwinder takes like any other;
    /// nil when the thread has not been on a CPU for a whole period since.
    public func latest(pid: Int32) -> ThreadSnapshot? {
        guard let ring else { return nil }
        var time: UInt64 = 0
        var length = 0
        let got = registers.withUnsafeMutableBufferPointer { regs in
            stack.withUnsafeMutableBufferPointer { bytes in
                sa_perf_stack_sampler_latest(
                    ring, ringBytes, regs.baseAddress, &time, bytes.baseAddress, bytes.count, &length, nil)
            }
        }
        guard got == 1, length > 0 else { return nil }
        cpuAtProgress = nil
        var file = RegisterFile()
        for index in 0..<RegisterFile.count { file[index] = registers[index] }
        return ThreadSnapshot(
            pid: pid, tid: tid, registers: file, stackStart: file.sp, stack: Array(stack[0..<length]),
            method: .perfSample, pauseNanos: 0, syscall: nil, timeNanos: time)
    }
}
