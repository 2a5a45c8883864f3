import StallDetection
import StallProc
import StallReports

/// The blocked call in which the latest sample found a lock-acquiring function. A
/// semaphore-based lock such as Python's waits in a plain futex wait that /proc cannot tell
/// from any other: while the thread stays in that very call, it waits on a lock.
struct LockHint {
    /// Functions that acquire a lock by waiting in a futex /proc does not show as a mutex's.
    static let lockAcquireFrames = [
        "PyThread_acquire_lock*", "sem_wait*", "sem_timedwait*", "sem_clockwait*", "__new_sem_wait*",
        "pthread_rwlock_*lock*", "pthread_mutex_*lock*", "__lll_lock_wait*",
    ]
    /// Python functions that wait for another thread or process through a lock of their own:
    /// a join, a condition or event, a queue, a future. Blocked (waiting on someone), not
    /// lock contention (issue 25: a `Thread.join` read as a deadlock).
    static let waitForAnotherFrames = [
        "*Thread.join", "*Thread._wait_for_tstate_lock", "*Condition.wait", "*Condition.wait_for", "*Event.wait",
        "*Barrier.wait", "*Queue.get", "*Queue.join", "*Future.result", "*Future.exception", "*Popen.wait",
        "*Popen._wait", "*Popen.communicate", "*Pool.join", "*AsyncResult.wait", "*AsyncResult.get",
    ]

    /// The same waits written in C: `queue.SimpleQueue.get`, the call gunicorn 27's arbiter
    /// idles in (`SimpleQueue.get(timeout=1.0)` for its signals), has no Python frame of its own.
    static let waitForAnotherNativeFrames = ["_queue_SimpleQueue_get*"]

    /// True when the innermost interpreted frame is one of `waitForAnotherFrames`, or the native
    /// frames running it are one of `waitForAnotherNativeFrames`: the lock the thread waits in
    /// is the join's or the queue's, not one that work contends for.
    static func waitsForAnother(_ frames: [SampledFrame]) -> Bool {
        guard let index = frames.firstIndex(where: \.isInterpreted) else { return false }
        if frames[..<index].contains(where: { frame in
            waitForAnotherNativeFrames.contains { GlobPattern.matches($0, frame.function) }
        }) {
            return true
        }
        return waitForAnotherFrames.contains { GlobPattern.matches($0, frames[index].function) }
    }

    /// The call the hint is about, if the latest sample left one.
    private(set) var syscall: ProcSyscallInfo?

    /// What a sample of a thread seen `activity` in `syscall` says: a futex wait (202) under a
    /// lock-acquiring frame, unless the lock is a join's or a queue's. Any other sample drops
    /// the hint.
    mutating func learn(activity: ThreadActivity, syscall info: ProcSyscallInfo?, frames: [SampledFrame]) {
        syscall = nil
        if activity == .blockedCall || activity == .lockWait, let info, info.syscallNumber == 202,
            frames.contains(where: { frame in
                Self.lockAcquireFrames.contains { GlobPattern.matches($0, frame.function) }
            }),
            !Self.waitsForAnother(frames)
        {
            syscall = info
        }
    }

    /// True while the thread is in the very call the hint was taken in.
    func holds(in syscall: ProcSyscallInfo?) -> Bool {
        guard let hint = self.syscall else { return false }
        return syscall == hint
    }
}
