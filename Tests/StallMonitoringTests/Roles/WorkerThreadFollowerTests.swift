@testable import StallProc
import Testing

@testable import StallMonitoring

/// Issue 25 (`cargo test`): the one thread a batch process's main thread waits for is watched
/// in its stead; with none or several, nothing is.
@Suite struct WorkerThreadFollowerTests {
    final class FakeProbe: WorkerThreadFollower.Probe {
        let tid: Int32
        var state: Character? = "R"
        var cpu: UInt64 = 0
        var queue: UInt64 = 0
        init(tid: Int32) { self.tid = tid }

        func stat() -> ProcThreadStat? {
            state.map { ProcThreadStat(state: $0, name: "t", ppid: 1, userTicks: 0, systemTicks: 0, startTicks: 0, processor: 0) }
        }
        func syscall() -> ProcSyscallInfo? { state == "R" ? .running : .inSyscall(number: 230, arguments: [], sp: 1, pc: 2) }
        func schedstat() -> ProcSchedstat? { ProcSchedstat(cpuNanos: cpu, runQueueNanos: queue, timeslices: 0) }
    }

    final class FakeTarget: WorkerThreadFollower.Target {
        var threads: [Int32] = []
        var probes: [Int32: FakeProbe] = [:]
        var listings = 0

        func otherThreads() -> [Int32] {
            listings += 1
            return threads
        }
        func probe(tid: Int32) -> WorkerThreadFollower.Probe? { probes[tid] }

        func add(_ tid: Int32) -> FakeProbe {
            let probe = FakeProbe(tid: tid)
            probes[tid] = probe
            threads.append(tid)
            return probe
        }
    }

    @Test func followsTheOnlyOtherThreadAndNoneOfSeveral() {
        let target = FakeTarget()
        let follower = WorkerThreadFollower(target: target)
        #expect(follower.look(at: 0) == nil, "no other thread")
        let first = target.add(101)
        #expect(follower.look(at: 0.01)?.probe.tid == 101)
        #expect(follower.look(at: 0.02)?.syscall == .running)
        // A second thread (parallel tests): which one the main thread waits for is unknown.
        _ = target.add(102)
        #expect(follower.look(at: 0.2) == nil)
        // The first ends; the second is the only one left.
        target.threads = [102]
        first.state = nil
        #expect(follower.look(at: 0.4)?.probe.tid == 102)
    }

    /// The threads are listed again only every `relistInterval` while the followed one lives,
    /// at once when it is gone or a zombie (the next test's thread replaces it).
    @Test func relistsOnlyWhenDueOrTheThreadIsGone() {
        let target = FakeTarget()
        let follower = WorkerThreadFollower(target: target)
        let first = target.add(101)
        _ = follower.look(at: 0)
        let listed = target.listings
        for step in 1..<9 { _ = follower.look(at: Double(step) * 0.01) }
        #expect(target.listings == listed, "no listing while the followed thread lives")
        _ = follower.look(at: 0.1 + 1e-9)
        #expect(target.listings == listed + 1)
        first.state = "Z"
        target.threads = []
        _ = target.add(103)
        #expect(follower.look(at: 0.11)?.probe.tid == 103)
        #expect(target.listings == listed + 2)
    }

    /// CPU and run-queue time summed over the threads followed, by their own deltas: one count
    /// that only grows, though each new test thread starts from zero.
    @Test func cpuTimeOnlyGrowsAcrossThreads() {
        let target = FakeTarget()
        let follower = WorkerThreadFollower(target: target)
        let first = target.add(101)
        first.cpu = 500
        _ = follower.look(at: 0)
        #expect(follower.cpuNanos == 0, "the first look only starts the count")
        first.cpu = 800
        first.queue = 40
        _ = follower.look(at: 0.01)
        #expect(follower.cpuNanos == 300 && follower.runQueueNanos == 40)
        first.state = nil
        target.threads = []
        let second = target.add(102)
        second.cpu = 50
        _ = follower.look(at: 0.02)
        #expect(follower.cpuNanos == 300, "a new thread's count starts afresh")
        second.cpu = 250
        _ = follower.look(at: 0.03)
        #expect(follower.cpuNanos == 500)
        follower.forget()
        #expect(follower.cpuNanos == 500, "forgetting keeps what was counted")
    }
}
