import CPtrace

import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// Copies a thread's registers and stack, stopping it only when it is running and only for
/// the copy. Unwinding and symbolizing happen later, with the target running again.
///
/// ptrace requests are only honoured from the thread that seized the tracee, so one
/// capturer must be used from one OS thread.
public final class ThreadCapturer {
    public struct Options: Sendable {
        /// Upper bound on the stack bytes copied per capture.
        public var maxStackBytes: Int = 512 * 1024
        /// How long to wait for a running thread to reach the ptrace stop. A thread in
        /// uninterruptible sleep (state D) does not stop until its I/O ends; past the
        /// deadline it is left running and detached as soon as it stops.
        public var stopDeadlineNanos: UInt64 = 250_000_000
        /// Read the last capture's stack range just before stopping the thread
        /// (`warmStackCopy`); off only to measure what it saves.
        public var warmsStackCopy = true
        /// Copy the stack after the thread resumes, when the read just before the stop covers
        /// it (`captureStopped`). Off by default: a word that reads the same before and after
        /// the stop may still have held something else while the thread was stopped, when the
        /// thread left those frames and came back through the same calls in between. Beside two
        /// CPU hogs the `churn` fixture (a stack that moves every few microseconds) got a
        /// broken stack from it once in about ten runs of its test; a thread stuck in one call
        /// does not do that, but a busy loop calling the same helpers over and over can. The
        /// benchmark measures it (0.93x / 0.98x the bare ptrace floor against 1.41x / 1.58x
        /// for the copy made while stopped).
        public var copiesStackAfterResume = false
        public init() {}
    }

    public var options: Options
    /// Threads seized whose stop did not arrive before the deadline.
    private var pendingDetach: Set<Int32> = []
    /// This thread's copy buffer (see `StackScratch`).
    private var scratch: StackScratch { StackScratch.forCurrentThread(minimum: options.maxStackBytes) }
    /// Where each thread's last stopped copy was (stack pointer, bytes), read again just
    /// before the next stop (`warmStackCopy`).
    private var lastCopy: [Int32: (sp: UInt64, bytes: Int)] = [:]
    /// The stack as read just before the stop (`warmStackCopy`): what a copy taken after the
    /// resume is checked against.
    private var before: [UInt8] = []

    public init(options: Options = Options()) {
        self.options = options
        // The stop guardian is forked before the scratch buffer is written: forked later, the
        // first copy into it took a copy-on-write fault per page while the target was stopped
        // (a one-shot dump's pause went from ~0.2 ms to ~1.2 ms).
        _ = ThreadCapturer.stopGuard
        _ = scratch
    }

    deinit {
        // Exiting the tracer thread would detach these too; do it now to be explicit.
        reapPending(final: true)
    }

    /// Captures `tid` of `pid`. `stackEnd(sp)` returns the end of the mapping holding the
    /// stack pointer, to bound the copy; `allowStop` false forbids ptrace stops altogether
    /// (idle threads must never be stopped: their epoll_wait would return EINTR).
    /// `interpreter(tid)` copies an interpreter's frame chain inside the capture window (while
    /// stopped, or while the blocked thread is known not to have moved).
    public func capture(
        pid: Int32, tid: Int32, probe: ThreadProbeFiles?, allowStop: Bool,
        stackEnd: (UInt64) -> UInt64?, interpreter: ((Int32) -> PythonFrameChain?)? = nil
    ) throws -> ThreadSnapshot {
        reapPending(final: false)
        let syscallInfo: ProcSyscallInfo?
        if let probe {
            syscallInfo = probe.syscall()
        } else {
            syscallInfo = (try? ProcFS.readText("/proc/\(pid)/task/\(tid)/syscall", pid: pid))
                .flatMap { ProcSyscallInfo.parse($0) }
        }
        if let info = syscallInfo, info != .running {
            if let snapshot = captureWithoutStop(
                pid: pid, tid: tid, info: info, probe: probe, stackEnd: stackEnd, interpreter: interpreter)
            {
                return snapshot
            }
        }
        guard allowStop else { throw StallAgentError.threadMoved(tid: tid) }
        return try captureStopped(pid: pid, tid: tid, stackEnd: stackEnd, interpreter: interpreter)
    }

    /// A blocked thread's SP and PC come from /proc; its stack is copied while it sleeps
    /// and /proc is read again: if anything moved, the copy may be torn and is discarded.
    public func captureWithoutStop(
        pid: Int32, tid: Int32, info: ProcSyscallInfo, probe: ThreadProbeFiles? = nil,
        stackEnd: (UInt64) -> UInt64?, interpreter: ((Int32) -> PythonFrameChain?)? = nil
    ) -> ThreadSnapshot? {
        guard let sp = info.stackPointer, let pc = info.programCounter, sp != 0 else { return nil }
        // Kept-open files when the monitor has them; a one-shot dump opens them.
        func schedstat() -> ProcSchedstat? {
            probe?.schedstat()
                ?? (try? ProcFS.readText("/proc/\(pid)/task/\(tid)/schedstat", pid: pid)).flatMap { ProcSchedstat.parse($0) }
        }
        func syscall() -> ProcSyscallInfo? {
            probe?.syscall()
                ?? (try? ProcFS.readText("/proc/\(pid)/task/\(tid)/syscall", pid: pid)).flatMap { ProcSyscallInfo.parse($0) }
        }
        let schedBefore = schedstat()
        let stack = copyStack(pid: tid, sp: sp, stackEnd: stackEnd)
        // Read before the re-check: if the thread moved, the chain may be torn too.
        let chain = stack.isEmpty ? nil : interpreter?(tid)
        guard !stack.isEmpty, syscall() == info, schedstat() == schedBefore else { return nil }
        let registers: RegisterFile
        if case .inSyscall(let number, let arguments, _, _) = info {
            registers = RegisterFile(syscall: number, arguments: arguments, sp: sp, pc: pc)
        } else {
            var r = RegisterFile()
            r[RegisterFile.rsp] = sp
            r[RegisterFile.rip] = pc
            registers = r
        }
        var snapshot = ThreadSnapshot(
            pid: pid, tid: tid, registers: registers, stackStart: sp, stack: stack,
            method: .withoutStop, pauseNanos: 0, syscall: info, timeNanos: MonotonicTime.nanos())
        snapshot.interpreterChain = chain
        return snapshot
    }

    /// Seize, interrupt, copy registers, detach; the stack is copied after the detach when it
    /// can be checked, otherwise while the thread is stopped. The thread is stopped only
    /// between the interrupt and the detach; every exit path detaches or leaves the thread
    /// queued for detaching.
    ///
    /// Why after: a process_vm_readv of a stopped thread cost it 25–35 µs on top of the bare
    /// stop whatever its size (256 bytes as much as 6 KiB; this 2-vCPU VM), ~8 µs right after
    /// the same range was read, against ~50 µs for the whole stop. So the last capture's range
    /// is read just before the stop and the stack again after the detach; a word that reads the
    /// same both times held that value while the thread was stopped too (a thread stuck in one
    /// call keeps its callers' frames), and the unwinder refuses the words that differ
    /// (`ThreadSnapshot.changedWords`, unwind end `.stackChanged`; `ProcessInspector` then
    /// takes the capture again with the copy made while stopped). Where the read before does
    /// not cover the stack pointer (the first capture, a much deeper stack), or with
    /// `copyingAfterResume` false, the copy is made while stopped as before.
    ///
    /// The agent itself must not be stopped while it holds the target stopped (Ctrl-Z, SIGSTOP
    /// from a user): the interrupt-to-detach span is a capture window (`stop_guard.h`), in
    /// which job-control stops are deferred to its end and a SIGSTOP is undone by the
    /// guardian process until the target is released.
    public func captureStopped(
        pid: Int32, tid: Int32, stackEnd: (UInt64) -> UInt64?, interpreter: ((Int32) -> PythonFrameChain?)? = nil,
        copyingAfterResume: Bool = true
    ) throws -> ThreadSnapshot {
        _ = ThreadCapturer.stopGuard
        if sa_ptrace_seize(tid, 0) != 0 {
            throw seizeError(errno, pid: pid, tid: tid)
        }
        let readBefore = warmStackCopy(pid: tid, tid: tid)
        let start = MonotonicTime.nanos()
        sa_capture_window_begin()
        defer { sa_capture_window_end() }
        if sa_ptrace_interrupt(tid) != 0 {
            let code = errno
            _ = sa_ptrace_detach(tid, 0)
            throw code == ESRCH ? StallAgentError.targetExited(pid: pid) : StallAgentError.system(operation: "PTRACE_INTERRUPT", errno: code)
        }
        var pendingSignal: Int32 = 0
        switch waitForStop(tid: tid, start: start) {
        case .stopped(let signal):
            pendingSignal = signal
        case .exited:
            throw StallAgentError.targetExited(pid: pid)
        case .timedOut:
            pendingDetach.insert(tid)
            throw StallAgentError.captureTimedOut(tid: tid, milliseconds: Int(options.stopDeadlineNanos / 1_000_000))
        case .failed(let code):
            pendingDetach.insert(tid)
            throw code == ECHILD || code == ESRCH ? StallAgentError.targetExited(pid: pid) : StallAgentError.system(operation: "waitpid", errno: code)
        }
        var regs = user_regs_struct()
        let gotRegisters = sa_ptrace_getregs(tid, &regs) == 0
        let sp = regs.rsp
        let checkable =
            gotRegisters && copyingAfterResume && options.copiesStackAfterResume
            && readBefore.map { sp >= $0.start && sp - $0.start < UInt64($0.count) } == true
        var copied = gotRegisters && !checkable ? copyStackToScratch(pid: tid, sp: sp, stackEnd: stackEnd) : 0
        // Pointers only (a few small reads): code objects are named after the resume.
        let chain = gotRegisters ? interpreter?(tid) : nil
        let detached = sa_ptrace_detach(tid, pendingSignal) == 0
        let end = MonotonicTime.nanos()
        if !detached && errno != ESRCH { pendingDetach.insert(tid) }
        guard gotRegisters else { throw StallAgentError.targetExited(pid: pid) }
        var changedWords: Set<Int> = []
        if checkable, let readBefore {
            copied = copyStackToScratch(pid: tid, sp: sp, stackEnd: stackEnd)
            guard copied > 0 else { throw StallAgentError.targetExited(pid: pid) }
            (copied, changedWords) = compareWithBefore(sp: sp, copied: copied, before: readBefore)
        }
        if copied > 0 {
            if lastCopy.count >= 64 { lastCopy.removeAll() }
            lastCopy[tid] = (sp, copied)
        }
        // Copied out of the scratch buffer only now, with the thread running again.
        let stack = copied > 0 ? Array(scratch.bytes[0..<copied]) : []
        var snapshot = ThreadSnapshot(
            pid: pid, tid: tid, registers: RegisterFile(ptrace: regs), stackStart: sp, stack: stack,
            method: .ptraceStop, pauseNanos: end - start, syscall: nil, timeNanos: end)
        snapshot.changedWords = changedWords
        snapshot.copiedAfterResume = checkable
        let origRax = Int64(bitPattern: regs.orig_rax)
        if origRax >= 0 { snapshot.interruptedSyscall = (Int(origRax), regs.rdi) }
        snapshot.interpreterChain = chain
        return snapshot
    }

    /// The 8-byte words of the copy in `scratch` (from `sp`) that differ from the read before
    /// the stop, by index from `sp`; the copy is cut where the read before ended, since
    /// nothing vouches for the bytes past it.
    private func compareWithBefore(sp: UInt64, copied: Int, before range: (start: UInt64, count: Int)) -> (Int, Set<Int>) {
        let offset = Int(sp - range.start)
        let length = min(copied, range.count - offset)
        var changed: Set<Int> = []
        scratch.bytes.withUnsafeBytes { after in
            before.withUnsafeBytes { old in
                var word = 0
                while (word + 1) * 8 <= length {
                    let a = after.loadUnaligned(fromByteOffset: word * 8, as: UInt64.self)
                    let b = old.loadUnaligned(fromByteOffset: offset + word * 8, as: UInt64.self)
                    if a != b { changed.insert(word) }
                    word += 1
                }
            }
        }
        return (length & ~7, changed)
    }

    enum StopResult {
        case stopped(pendingSignal: Int32)
        case exited
        case timedOut
        case failed(Int32)
    }

    /// The signal a ptrace stop holds for the tracee, to hand back when it is continued or
    /// detached: an interrupt- or group-stop carries PTRACE_EVENT_STOP and holds none; a bare
    /// stop is a signal about to be delivered (a SIGTRAP there is ptrace's own).
    static func signalToDeliver(stopStatus status: Int32) -> Int32 {
        sa_wptrace_event(status) == 0 && sa_wstopsig(status) != SIGTRAP ? sa_wstopsig(status) : 0
    }

    /// Polls waitpid(WNOHANG): a blocking waitpid would hang on a thread in D state.
    private func waitForStop(tid: Int32, start: UInt64) -> StopResult {
        var status: Int32 = 0
        while true {
            let result = sa_waitpid_nohang(tid, &status)
            if result == tid {
                if sa_wifexited(status) != 0 || sa_wifsignaled(status) != 0 {
                    ReapedExitLedger.shared.record(pid: tid, rawStatus: status)
                    return .exited
                }
                if sa_wifstopped(status) != 0 { return .stopped(pendingSignal: Self.signalToDeliver(stopStatus: status)) }
                continue
            }
            if result < 0 {
                if errno == EINTR { continue }
                return .failed(errno)
            }
            let elapsed = MonotonicTime.nanos() - start
            if elapsed > options.stopDeadlineNanos { return .timedOut }
            if elapsed < 2_000_000 {
                sched_yield()
            } else {
                var ts = timespec(tv_sec: 0, tv_nsec: 100_000)
                nanosleep(&ts, nil)
            }
        }
    }

    /// Detaches threads whose stop arrived after their deadline. `final` gives up on those
    /// still not stopped (the kernel detaches them when this thread exits).
    public func reapPending(final: Bool) {
        guard !pendingDetach.isEmpty else { return }
        for tid in pendingDetach {
            var status: Int32 = 0
            let result = sa_waitpid_nohang(tid, &status)
            if result == tid {
                ReapedExitLedger.shared.record(pid: tid, rawStatus: status)
                if sa_wifstopped(status) != 0 { _ = sa_ptrace_detach(tid, Self.signalToDeliver(stopStatus: status)) }
                pendingDetach.remove(tid)
            } else if result < 0 || final {
                pendingDetach.remove(tid)
            }
        }
    }

    public var pendingCount: Int { pendingDetach.count }

    /// Installed once, before the first stop: the job-control handlers and the guardian.
    static let stopGuard: Bool = sa_stop_guard_install() == 0

    /// Reads, with the thread still running, the stack range the last capture took (and a
    /// little below it) into `before`, and returns where that read starts and how many bytes
    /// it has. It also warms a copy made while stopped: an 8 KiB process_vm_readv took ≈ 10 µs
    /// cold and ≈ 3 µs right after the same range was read (the thread's page tables and its
    /// older frames, which it is not writing, already in this CPU's cache). The stack moves
    /// little between samples of one stall, so last time's range is nearly always this time's.
    private func warmStackCopy(pid: Int32, tid: Int32) -> (start: UInt64, count: Int)? {
        guard options.warmsStackCopy, let (sp, bytes) = lastCopy[tid] else { return nil }
        // A little below the old pointer too: the thread may be a call or two deeper now.
        let below = 1024
        let length = min(bytes + below, options.maxStackBytes + below)
        if before.count < length { before = [UInt8](repeating: 0, count: length) }
        return before.withUnsafeMutableBytes { buffer -> (start: UInt64, count: Int)? in
            // Below the old pointer may be unmapped: then from the pointer itself.
            let n = TargetMemory.read(pid: pid, address: sp &- UInt64(below), into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<length]))
            if n > 0 { return (sp &- UInt64(below), n) }
            let m = TargetMemory.read(pid: pid, address: sp, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<bytes]))
            return m > 0 ? (sp, m) : nil
        }
    }

    /// Stack copies read through the captured thread's own id, not the process's: every
    /// thread shares the memory, and a leader that called `pthread_exit` is a zombie with
    /// none, through which `dump --all-threads` read nothing of the threads running on.
    private func copyStack(pid: Int32, sp: UInt64, stackEnd: (UInt64) -> UInt64?) -> [UInt8] {
        let n = copyStackToScratch(pid: pid, sp: sp, stackEnd: stackEnd)
        return n > 0 ? Array(scratch.bytes[0..<n]) : []
    }

    private func copyStackToScratch(pid: Int32, sp: UInt64, stackEnd: (UInt64) -> UInt64?) -> Int {
        var length = options.maxStackBytes
        if let end = stackEnd(sp), end > sp { length = min(length, Int(end - sp)) }
        let scratch = StackScratch.forCurrentThread(minimum: length)
        return max(
            0,
            scratch.bytes.withUnsafeMutableBytes {
                TargetMemory.read(pid: pid, address: sp, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<length]))
            })
    }

    private func seizeError(_ code: Int32, pid: Int32, tid: Int32) -> StallAgentError {
        switch code {
        case ESRCH: return ProcFS.exists(pid: pid) ? .targetExited(pid: pid) : .noSuchProcess(pid: pid)
        case EPERM, EACCES:
            // An exiting process refuses PTRACE_SEIZE with EPERM too.
            guard let statusText = try? ProcFS.readText("/proc/\(pid)/status", pid: pid),
                let processStatus = ProcStatus.parse(statusText), processStatus.state != "Z", processStatus.state != "X"
            else { return .targetExited(pid: pid) }
            if let status = try? ProcFS.readText("/proc/\(pid)/task/\(tid)/status", pid: pid),
                let parsed = ProcStatus.parse(status), parsed.tracerPid != 0, parsed.tracerPid != getpid()
            {
                return .alreadyTraced(pid: pid, tracer: parsed.tracerPid)
            }
            return .permissionDenied(pid: pid, operation: "PTRACE_SEIZE")
        default: return .system(operation: "PTRACE_SEIZE", errno: code)
        }
    }
}
