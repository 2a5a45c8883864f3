import CPosix

import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// Samples a running thread without stopping it (docs/architecture.md, "Capture", issue 14): a per-thread
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
    private var fd: Int32
    private var ring: UnsafeMutableRawPointer?
    private var ringBytes: Int
    private var enabled = false
    /// Stack bytes the kernel copies per sample: the largest allowed (`limit`) until a sample
    /// shows how deep the thread's stack is, then sized to it (`fit`).
    public private(set) var stackBytes: Int
    private let limit: Int
    /// Samples whose stack copy ended before their unwind did.
    public private(set) var truncatedSamples = 0
    /// Times the event was opened again with another stack size.
    public private(set) var resizes = 0
    private var stack: [UInt8]
    private var registers = [UInt64](repeating: 0, count: Int(SA_PERF_SAMPLE_REGISTERS))
    private let periodNanos: UInt64
    /// The thread's on-CPU time when it was first seen after the last sample (or enabling).
    private var cpuAtProgress: UInt64?

    /// The kernel copies at most 64 KiB of stack per sample (a u16 record size).
    public static let maxStackBytes = 65_528

    /// The smallest copy: below it the saving is under a microsecond per sample.
    static let minStackBytes = 4096

    /// Ticks that land in the kernel are dropped (the bench's A/B; the agent counts them).
    private let userOnly: Bool

    /// `stackBytes` is the most the copy may grow to (64 KiB at most, the kernel's limit).
    /// `userOnly`: count only the thread's user time, as the sampler did before a syscall-heavy
    /// loop showed it dropping samples (kept for the bench's A/B of the cost).
    public init(tid: Int32, period: Double, stackBytes: Int, userOnly: Bool = false) throws {
        let bytes = min(max(stackBytes, PerfStackSampler.minStackBytes), PerfStackSampler.maxStackBytes)
        var ring: UnsafeMutableRawPointer?
        var ringBytes = 0
        periodNanos = UInt64(max(period, 0.001) * 1e9)
        self.userOnly = userOnly
        let fd = sa_perf_stack_sampler_open(tid, periodNanos, UInt32(bytes), userOnly ? 1 : 0, &ring, &ringBytes)
        if fd < 0 { throw StallAgentError.invalidArgument("perf_event_open: \(String(cString: strerror(errno)))") }
        self.tid = tid
        self.fd = fd
        self.ring = ring
        self.ringBytes = ringBytes
        self.stackBytes = bytes
        limit = bytes
        stack = [UInt8](repeating: 0, count: bytes)
    }

    deinit { sa_perf_stack_sampler_close(fd, ring, ringBytes) }

    /// Sizes later copies to the stack this sample's unwind used. The copy is the part of a
    /// sample's cost that is ours to cut — the interrupt alone (a time-only sample) costs the
    /// thread 17–18 µs on this VM — and a 64 KiB request copies up to the end of the mapping:
    /// a thread's whole 64 KiB (30.8 µs per sample against 22.5 µs for 4 KiB), the main
    /// thread's environment and auxv too. A copy that ended before the unwind did grows back
    /// to the limit at once (one sample lost, not one per doubling), and the next complete
    /// sample sizes it again.
    ///
    /// `copyTooShort`: the unwind ran past the end of the copy. `outermostStackPointer`: the
    /// outermost frame's stack pointer when the walk reached it (or the frame limit), nil
    /// when it ended early for another reason. (`fit(_:_:)` in Unwind/ takes the unwound stack.)
    public func fit(_ snapshot: ThreadSnapshot, copyTooShort: Bool, outermostStackPointer: UInt64?) {
        guard snapshot.method == .perfSample else { return }
        if copyTooShort {
            truncatedSamples += 1
            if stackBytes < limit { resize(limit) }
            return
        }
        // Only a walk that reached the outermost frame (or the frame limit) knows the depth.
        guard let outermost = outermostStackPointer, outermost >= snapshot.stackStart else { return }
        let wanted = PerfStackSampler.copySize(forDepth: Int(outermost - snapshot.stackStart), limit: limit)
        // Shrunk only by a quarter or more: each resize is a new event and ring.
        if wanted > stackBytes || wanted <= stackBytes - stackBytes / 4 { resize(wanted) }
    }

    /// The copy for a stack whose outermost frame lies `depth` bytes above the stack pointer:
    /// a quarter more plus 2 KiB, for the outermost frame itself and a deeper call next time,
    /// in whole KiB.
    static func copySize(forDepth depth: Int, limit: Int) -> Int {
        let bytes = (depth + depth / 4 + 2048 + 1023) & ~1023
        return min(max(bytes, minStackBytes), limit)
    }

    /// Opens the event again with another stack size (the kernel cannot change it in place),
    /// keeping it enabled if it was; on failure the old event stays.
    private func resize(_ bytes: Int) {
        var newRing: UnsafeMutableRawPointer?
        var newRingBytes = 0
        let newFD = sa_perf_stack_sampler_open(tid, periodNanos, UInt32(bytes), userOnly ? 1 : 0, &newRing, &newRingBytes)
        guard newFD >= 0 else { return }
        let wasEnabled = enabled
        setEnabled(false)
        sa_perf_stack_sampler_close(fd, ring, ringBytes)
        fd = newFD
        ring = newRing
        ringBytes = newRingBytes
        stackBytes = bytes
        resizes += 1
        setEnabled(wasEnabled)
    }

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
