import StallDetection
import StallProc
import StallReports
import Testing

@testable import StallMonitoring

/// Issue 25 (`cargo test`): the main thread's wait for another thread is learnt from its
/// samples, the worker is followed only while the main thread stays in that very wait, and
/// each stall keeps the worker its report is about.
@Suite struct WorkerDelegationTests {
    typealias FakeTarget = WorkerThreadFollowerTests.FakeTarget

    static func futex(pc: UInt64 = 0x7f00_0000_1000, sp: UInt64 = 0x7ffd_0000_2000) -> ProcSyscallInfo {
        .inSyscall(number: 202, arguments: [0, 0, 0, 0, 0, 0], sp: sp, pc: pc)
    }
    static func native(_ functions: [String]) -> [SampledFrame] {
        functions.map { SampledFrame(function: $0, module: "test-binary") }
    }
    static let parked = native(["syscall", "std::thread::Thread::park", "std::sync::mpmc::list::Channel<T>::recv", "main"])

    @Test func aWaitForAnotherThreadIsNativeJoinsParksAndReceives() {
        #expect(WorkerDelegation.waitsForAnotherThread(Self.parked))
        #expect(WorkerDelegation.waitsForAnotherThread(Self.native(["__futex_abstimed_wait_common", "pthread_join", "main"])))
        // A mutex: the thread waited for is not known.
        #expect(!WorkerDelegation.waitsForAnotherThread(Self.native(["__lll_lock_wait", "pthread_mutex_lock", "main"])))
        // An interpreter's waits are its own.
        let python = [SampledFrame(function: "pthread_join", module: "libc.so.6"), SampledFrame(function: "run", module: "python", language: "python")]
        #expect(!WorkerDelegation.waitsForAnotherThread(python))
    }

    /// Learnt only in a batch run from a join's stack, with the call's site; any other sample
    /// of the main thread forgets it.
    @Test func theWaitSiteIsLearntFromABatchJoin() {
        let workers = WorkerDelegation(follower: WorkerThreadFollower(target: FakeTarget()))
        workers.learnWaitSite(batch: true, frames: Self.parked, syscall: Self.futex())
        #expect(workers.waitSite?.number == 202)
        #expect(workers.waitSite?.pc == 0x7f00_0000_1000)
        #expect(workers.waitSite?.sp == 0x7ffd_0000_2000)
        workers.learnWaitSite(batch: true, frames: Self.native(["compute", "main"]), syscall: Self.futex())
        #expect(workers.waitSite == nil)
        workers.learnWaitSite(batch: false, frames: Self.parked, syscall: Self.futex())
        #expect(workers.waitSite == nil, "not a batch run")
        workers.learnWaitSite(batch: true, frames: Self.parked, syscall: .running)
        #expect(workers.waitSite == nil, "no call to match")
        workers.learnWaitSite(batch: true, frames: Self.parked, syscall: Self.futex())
        workers.forget()
        #expect(workers.waitSite == nil, "an exec forgets it")
    }

    /// The worker is followed while the main thread is blocked at the very site (same call,
    /// stack pointer and program counter), in a batch run whose runner frames are known.
    @Test func theWorkerIsFollowedOnlyAtTheLearntSite() {
        let target = FakeTarget()
        _ = target.add(101)
        let workers = WorkerDelegation(follower: WorkerThreadFollower(target: target))
        func follow(batch: Bool = true, knows: Bool = true, _ syscall: ProcSyscallInfo?, _ activity: ThreadActivity = .blockedCall)
            -> Bool
        {
            workers.follow(at: 0, batch: batch, knowsRunnerFrames: knows, syscall: syscall, activity: activity) != nil
        }
        #expect(!follow(Self.futex()), "no site learnt")
        workers.learnWaitSite(batch: true, frames: Self.parked, syscall: Self.futex())
        #expect(follow(Self.futex()))
        #expect(workers.followed?.tid == 101)
        #expect(follow(Self.futex(), .lockWait))
        #expect(!follow(Self.futex(pc: 0x7f00_0000_9000)), "another call site")
        #expect(workers.followed == nil)
        #expect(!follow(Self.futex(sp: 0x7ffd_0000_9000)), "another stack pointer")
        #expect(!follow(Self.futex(), .running))
        #expect(!follow(knows: false, Self.futex()), "runner frames not yet known")
        #expect(!follow(batch: false, Self.futex()))
        #expect(!follow(nil))
        #expect(follow(Self.futex()))
        workers.watchMainThread()
        #expect(workers.followed == nil)
    }

    /// Leaving the site in a batch run stops following: the threads are listed again at once.
    @Test func leavingTheSiteForgetsTheWorker() {
        let target = FakeTarget()
        _ = target.add(101)
        let workers = WorkerDelegation(follower: WorkerThreadFollower(target: target))
        workers.learnWaitSite(batch: true, frames: Self.parked, syscall: Self.futex())
        _ = workers.follow(at: 0, batch: true, knowsRunnerFrames: true, syscall: Self.futex(), activity: .blockedCall)
        _ = workers.follow(at: 0.01, batch: true, knowsRunnerFrames: true, syscall: Self.futex(), activity: .blockedCall)
        #expect(target.listings == 1, "followed within the relist interval")
        _ = workers.follow(at: 0.02, batch: true, knowsRunnerFrames: true, syscall: .running, activity: .running)
        _ = workers.follow(at: 0.03, batch: true, knowsRunnerFrames: true, syscall: Self.futex(), activity: .blockedCall)
        #expect(target.listings == 2)
        // Outside a batch run the follower is left as it was.
        _ = workers.follow(at: 0.04, batch: false, knowsRunnerFrames: true, syscall: .running, activity: .running)
        _ = workers.follow(at: 0.05, batch: true, knowsRunnerFrames: true, syscall: Self.futex(), activity: .blockedCall)
        #expect(target.listings == 2)
    }

    /// A stall is about the worker its episode sampled, until it ends; an episode that ends
    /// without a stall forgets the worker.
    @Test func eachStallKeepsItsWorker() {
        let workers = WorkerDelegation(follower: WorkerThreadFollower(target: FakeTarget()))
        workers.stallStarted(1)
        #expect(workers.stallWorker(1) == nil)
        #expect(workers.stalledThread(1) == "main thread")
        var nameReads = 0
        for _ in 0..<3 {
            workers.noteSampled(tid: 101) {
                nameReads += 1
                return "tests::slow"
            }
        }
        #expect(nameReads == 1, "a thread already named is not read again at every sample")
        workers.stallStarted(2)
        #expect(workers.stallWorker(2) == ReportThreadInfo(tid: 101, name: "tests::slow"))
        #expect(workers.stalledThread(2) == "thread tests::slow [101], which the main thread waits for,")
        workers.stallEnded(2)
        #expect(workers.stallWorker(2) == nil)
        #expect(workers.episodeWorker == nil)
        workers.noteSampled(tid: 102) { "tests::quick" }
        workers.episodeEnded()
        workers.stallStarted(3)
        #expect(workers.stallWorker(3) == nil)
    }
}
