import ReportTestSupport
import StallCapture
import StallDetection
import StallProc
import StallReports
import Testing

@testable import StallMonitoring
import StallSymbols

/// The owner of the lock the main thread waits on, from a fake process's threads: the next
/// thread in the chain, its state and stack, and whether the chain is a deadlock.
@Suite struct LockOwnerLookupTests {
    final class FakeThreads: LockOwnerLookup.Target {
        var chain: LockChainResolver.Chain?
        var states: [Int32: ThreadStateClassifier.Result] = [:]
        var stacks: [Int32: [SymbolizedFrame]] = [:]
        var names: [Int32: String] = [:]
        var captures: [(Int32, ThreadActivity)] = []

        func lockChain(from tid: Int32) -> LockChainResolver.Chain? { chain }
        func classification(of tid: Int32) -> ThreadStateClassifier.Result {
            states[tid] ?? ThreadStateClassifier.Result(activity: .running, detail: "running")
        }
        func namedStack(of tid: Int32, activity: ThreadActivity) -> [SymbolizedFrame]? {
            captures.append((tid, activity))
            return stacks[tid]
        }
        func threadName(_ tid: Int32) -> String? { names[tid] }
    }

    @Test func noLockHeldIsNoOwner() {
        let threads = FakeThreads()
        #expect(LockOwnerLookup.owner(from: 100, in: threads) == nil)
        #expect(threads.captures.isEmpty, "no stack taken")
    }

    /// The owner is the next thread in the chain, not its end: its stack is captured as what
    /// it is doing, and the whole chain goes with it.
    @Test func theOwnerIsTheNextThreadInTheChain() throws {
        let threads = FakeThreads()
        threads.chain = LockChainResolver.Chain(tids: [100, 101, 102], deadlock: false)
        threads.states[101] = ThreadStateClassifier.Result(activity: .lockWait, detail: "waiting on lock 0x5000", futexAddress: 0x5000)
        threads.stacks[101] = ReportFixtures.holder.frames
        threads.names[101] = "worker-1"
        let owner = try #require(LockOwnerLookup.owner(from: 100, in: threads))
        #expect(owner.tid == 101)
        #expect(owner.name == "worker-1")
        #expect(owner.detail == "waiting on lock 0x5000")
        #expect(owner.frames.map(\.function) == ReportFixtures.holder.frames.map(\.function))
        #expect(owner.waitChain == [100, 101, 102])
        #expect(!owner.deadlock)
        #expect(threads.captures.map(\.0) == [101])
        #expect(threads.captures.map(\.1) == [.lockWait])
    }

    /// A stack that cannot be captured leaves the owner without frames; a chain back to the
    /// main thread is a deadlock.
    @Test func aDeadlockedOwnerWithoutAStack() throws {
        let threads = FakeThreads()
        threads.chain = LockChainResolver.Chain(tids: [100, 101, 100], deadlock: true)
        let owner = try #require(LockOwnerLookup.owner(from: 100, in: threads))
        #expect(owner.tid == 101)
        #expect(owner.name == nil)
        #expect(owner.frames.isEmpty)
        #expect(owner.deadlock)
    }
}
