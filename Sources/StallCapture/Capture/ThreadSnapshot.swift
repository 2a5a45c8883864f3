import StallProc

/// Everything needed to unwind a thread later, copied while it was (or without it being)
/// stopped: registers and the live part of its stack.
public struct ThreadSnapshot: Sendable {
    public enum Method: String, Sendable, Codable {
        /// Read from /proc/…/syscall and process_vm_readv while the thread stayed blocked.
        case withoutStop
        /// PTRACE_INTERRUPT, registers and stack copied, thread resumed.
        case ptraceStop
        /// Copied by the kernel at a perf_event sample interrupt while the thread ran.
        case perfSample
    }

    public var pid: Int32
    public var tid: Int32
    public var registers: RegisterFile
    /// Target address of `stack[0]` (the stack pointer at capture).
    public var stackStart: UInt64
    public var stack: [UInt8]
    public var method: Method
    /// How long the thread could not run because of this capture (0 without a stop).
    public var pauseNanos: UInt64
    /// The system call the thread was blocked in, when captured without a stop.
    public var syscall: ProcSyscallInfo?
    /// Monotonic time of the capture.
    public var timeNanos: UInt64
    /// With a stop: the system call the thread had just been in when it stopped (orig_rax;
    /// a PTRACE_INTERRUPT takes effect on the way back to user space, so a thread busy inside
    /// write(2) stops with write's number here), and its first argument. Nil when it was
    /// interrupted in user code.
    public var interruptedSyscall: (number: Int, firstArgument: UInt64)?
    /// The interpreter's frame chain (CPython), copied in the same window as the stack so the
    /// two agree; nil for a process without one.
    public var interpreterChain: PythonFrameChain?
    /// The stack was copied after the thread resumed (`ThreadCapturer.captureStopped`).
    public var copiedAfterResume = false
    /// For a copy made after the resume: the 8-byte words of `stack` (by index from its start)
    /// that read differently just before the stop, so their value while the thread was
    /// stopped is unknown. The unwinder does not read them (unwind end `.stackChanged`).
    public var changedWords: Set<Int> = []

    /// The 8-byte word at `address` in the stack copy, nil outside it or where the copy made
    /// after the resume saw it change.
    public func stackWord(at address: UInt64) -> UInt64? {
        guard address >= stackStart, address - stackStart <= UInt64(stack.count), UInt64(stack.count) - (address - stackStart) >= 8
        else { return nil }
        let offset = Int(address - stackStart)
        if !changedWords.isEmpty, changedWords.contains(offset >> 3) || (offset & 7 != 0 && changedWords.contains((offset >> 3) + 1)) {
            return nil
        }
        return stack.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt64.self) }
    }
}
