import StallDetection
import StallProc

/// What the latest sample says that /proc cannot: file I/O under a thread /proc shows running
/// (`IOHint`), a lock under a plain futex wait (`LockHint`).
struct SampleHints {
    var io = IOHint()
    var lock = LockHint()

    /// What the hints make of a thread /proc shows `activity` in `syscall`: a running thread in
    /// file I/O is in I/O, a blocked one still in the call a lock-acquiring frame was sampled in
    /// waits on a lock; nil when they say nothing.
    func correction(of activity: ThreadActivity, in syscall: ProcSyscallInfo?) -> ThreadActivity? {
        if activity == .running, io.inFileIO { return .ioWait }
        if activity == .blockedCall, lock.holds(in: syscall) { return .lockWait }
        return nil
    }
}
