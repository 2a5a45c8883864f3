import StallDetection
import StallProc
import StallReports

/// Watches, in a batch process, the thread its main thread waits for in the main thread's
/// stead (docs/architecture.md, "A thread the main thread waits for"): learns where the main
/// thread waits for another thread from its samples, follows that thread (through
/// `WorkerThreadFollower`) while the main thread stays in that very wait, and keeps which
/// thread each stall's report is about.
final class WorkerDelegation {
    /// Native code joining or waiting for another thread: pthread's join, Rust's `JoinHandle`,
    /// thread parking and channel receives (libtest's main thread waits on a channel while a
    /// test runs in a thread of its own). A mutex or a condition variable is not: the thread
    /// waited for is not known.
    static let waitForThreadFrames = [
        "pthread_join*", "__pthread_clockjoin*", "__pthread_timedjoin*", "*JoinHandle*::join*", "*JoinInner*::join*",
        "<std::thread::Thread>::park*", "std::thread::park*", "std::thread::Thread::park*", "*mpsc*::recv*",
        "*mpmc*::recv*",
    ]

    /// True for a stack of machine code only (an interpreter's thread waits are its own, see
    /// `LockHint.waitsForAnother`) with a frame of `waitForThreadFrames`.
    static func waitsForAnotherThread(_ frames: [SampledFrame]) -> Bool {
        guard !frames.contains(where: \.isInterpreted) else { return false }
        return frames.contains { frame in waitForThreadFrames.contains { GlobPattern.matches($0, frame.function) } }
    }

    /// The thread a batch process's main thread waits for, watched in its stead.
    let follower: WorkerThreadFollower
    /// The worker the latest probe watched instead of the main thread (nil: the main thread).
    private(set) var followed: WorkerThreadFollower.Probe?
    /// Where (system call, stack pointer, program counter) the latest sample of the main thread
    /// found it joining or waiting for another thread (`waitForThreadFrames`): while it waits
    /// there, the thread it waits for is watched in its stead. Not the call's arguments: a
    /// runner joining test after test from one call site waits on another futex each time, and
    /// matching them re-learnt the site from a new sample per test, 0.1 s late.
    private(set) var waitSite: (number: Int, sp: UInt64, pc: UInt64)?
    /// The worker whose samples the current episode took, and per stall the worker its report
    /// is about.
    private(set) var episodeWorker: ReportThreadInfo?
    private var stallWorkers: [Int: ReportThreadInfo] = [:]

    init(follower: WorkerThreadFollower) {
        self.follower = follower
    }

    /// The followed workers' CPU and run-queue time (see `WorkerThreadFollower`).
    var cpuNanos: UInt64 { follower.cpuNanos }
    var runQueueNanos: UInt64 { follower.runQueueNanos }

    /// The probe watches the main thread (an idle loop decided by its syscall file alone).
    func watchMainThread() {
        followed = nil
    }

    /// After a probe of the main thread found it in `activity` in `syscall`: the worker to
    /// watch in its stead, with what it is doing, when the main thread is in a batch run (whose
    /// runner frames are known: a test's frames taken for the runner's are never a stall) in
    /// the learnt wait site, blocked or waiting on a lock; nil otherwise. A batch process whose
    /// main thread left the site stops following.
    func follow(
        at now: Double, batch: Bool, knowsRunnerFrames: Bool, syscall: ProcSyscallInfo?, activity: ThreadActivity
    ) -> (stat: ProcThreadStat, syscall: ProcSyscallInfo?)? {
        followed = nil
        if batch, knowsRunnerFrames, let site = waitSite, let syscall,
            syscall.syscallNumber == site.number, syscall.stackPointer == site.sp, syscall.programCounter == site.pc,
            activity == .blockedCall || activity == .lockWait, let seen = follower.look(at: now)
        {
            followed = seen.probe
            return (seen.stat, seen.syscall)
        } else if batch {
            follower.forget()
        }
        return nil
    }

    /// A sample was taken of the followed worker `tid`, called `name`: the episode is its.
    /// `name` is read only for a thread not already named: a sample every 50 ms read its
    /// `comm` file each time.
    func noteSampled(tid: Int32, name: () -> String) {
        guard episodeWorker?.tid != tid else { return }
        episodeWorker = ReportThreadInfo(tid: tid, name: name())
    }

    /// A sample of the main thread itself: in a batch run, a stack of `frames` waiting for
    /// another thread in `syscall` is the site to follow from; anything else forgets the site.
    func learnWaitSite(batch: Bool, frames: [SampledFrame], syscall: ProcSyscallInfo?) {
        waitSite = nil
        if batch, Self.waitsForAnotherThread(frames), let info = syscall,
            let number = info.syscallNumber, let sp = info.stackPointer, let pc = info.programCounter
        {
            waitSite = (number, sp, pc)
        }
    }

    /// A stall began: it is about the episode's worker, if one was sampled.
    func stallStarted(_ id: Int) {
        if let episodeWorker { stallWorkers[id] = episodeWorker }
    }

    /// A stall ended (its final report written): forgotten, with the episode's worker.
    func stallEnded(_ id: Int) {
        stallWorkers[id] = nil
        episodeWorker = nil
    }

    /// An episode ended: the next one's samples say whose it is.
    func episodeEnded() {
        episodeWorker = nil
    }

    /// The worker a stall's report is about (nil: the main thread).
    func stallWorker(_ id: Int) -> ReportThreadInfo? {
        stallWorkers[id]
    }

    /// The thread a stall is about: the main thread, or the one it waits for.
    func stalledThread(_ id: Int) -> String {
        guard let thread = stallWorkers[id] else { return "main thread" }
        return "thread \(thread.name) [\(thread.tid)], which the main thread waits for,"
    }

    /// The process exec'd: the old program's threads and wait site mean nothing now.
    func forget() {
        follower.forget()
        waitSite = nil
    }
}
