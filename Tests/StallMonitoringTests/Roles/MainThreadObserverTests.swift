import StallCapture
import StallDetection
import StallReports
import Testing

@testable import StallMonitoring
@testable import StallProc

/// One probe made into an observation, from a fake main thread whose /proc files and stacks the
/// test writes: a loop at rest read from its syscall file alone, a nested wait taken as work,
/// parking settled, the last sample's hint, the process's end.
@Suite struct MainThreadObserverTests {
    typealias Sites = WaitSiteClassifierTests

    final class FakeTarget: MainThreadObserver.Target {
        let thread = WaitSiteClassifierTests.FakeThread()
        let pid: Int32 = 4242
        var currentSyscall: ProcSyscallInfo? = .running
        var state: Character? = "R"
        var exitCode: Int32?
        var cpuNanos: UInt64 = 0
        var signal: Int32?
        var statReads = 0

        func syscall() -> ProcSyscallInfo? { currentSyscall }
        func stat() -> ProcThreadStat? {
            statReads += 1
            return state.map {
                var stat = ProcThreadStat(state: $0, name: "app", ppid: 1, userTicks: 0, systemTicks: 0, startTicks: 0, processor: 0)
                stat.exitCode = exitCode
                return stat
            }
        }
        func schedstat() -> ProcSchedstat? { ProcSchedstat(cpuNanos: cpuNanos, runQueueNanos: 0, timeslices: 0) }
        func fileKind(_ fd: Int) -> String? { fd == 5 ? "/var/lib/data.db" : nil }
        func reapedSignal() -> Int32? { signal }
        func children() -> String { "" }

        func stopFreeStack(_ syscall: ProcSyscallInfo) -> UnwoundStack? { thread.stopFreeStack(syscall) }
        func moduleStart(containing address: UInt64) -> UInt64? { thread.moduleStart(containing: address) }
        func functionName(at address: UInt64) -> String? { thread.functionName(at: address) }
        func namedFrames(_ stack: UnwoundStack) -> [SampledFrame] { thread.namedFrames(stack) }
        func frameFunctions(_ stack: UnwoundStack) -> [String?] { thread.frameFunctions(stack) }
    }

    struct NoWaker: Error {}

    final class Harness {
        let target = FakeTarget()
        let flowHarness = StallReportFlowTests.Harness()
        let wakeUp = WakeUpArming(openWaker: { throw NoWaker() })
        let sampler: StackSampler
        let observer: MainThreadObserver

        init() throws {
            let flow = flowHarness.flow
            let workers = WorkerDelegation(follower: WorkerThreadFollower(target: WorkerThreadFollowerTests.FakeTarget()))
            sampler = StackSampler(
                target: StackSamplerTests.FakeTarget(), symbolizer: SampleSymbolizer(appFrames: AppFrameRule()), workers: workers,
                flow: flow, log: { _ in })
            let classifier = ThreadStateClassifier(extraIdleSyscalls: [])
            observer = MainThreadObserver(
                target: target,
                waitSites: WaitSiteClassifier(idleSyscalls: classifier.idleSyscalls, busyFramePatterns: [], idleFramePatterns: []),
                activities: ActivityClassifier(classifier: classifier, hasIdleFrames: false, clock: { 0 }, readFrozen: { false }),
                flow: flow, workers: workers, wakeUp: wakeUp, sampler: sampler,
                identity: IdentityActing(of: flowHarness.process, redactArgv: false, unit: nil, quiet: true, log: { _ in }),
                turnTracker: try LoopTurnTracker(tid: 4242, mode: .stackRule, hasLoopProbe: false, log: { _ in }),
                childWaitsAreParking: false, hasBusyFrames: false)
        }

        func probe(at now: Double, turned: Bool = false) -> ThreadObservation {
            wakeUp.beginStep()
            return observer.observe(at: now, turned: turned, in: flowHarness.watch)
        }
    }

    /// Once its home is known, a loop asleep there is idle from the syscall file alone: no
    /// stat, no schedstat, and the wake-up may sleep on it.
    @Test func aLoopAtRestIsReadFromItsSyscallFileAlone() throws {
        let harness = try Harness()
        let target = harness.target
        target.state = "S"
        target.currentSyscall = target.thread.wait(sp: 0x7ffd_1000, callers: [("main_loop", Sites.app + 0x1234, 0x7ffd_1100)])
        #expect(harness.probe(at: 0.01).activity == .idle)
        let readsAfterFirst = target.statReads
        #expect(readsAfterFirst == 1, "a new wait site is read in full")
        #expect(harness.probe(at: 0.02).activity == .idle)
        #expect(harness.probe(at: 0.03).activity == .idle)
        #expect(target.statReads == readsAfterFirst, "asleep at home: the syscall file alone")
        #expect(harness.wakeUp.settledIn == target.currentSyscall)
        #expect(!harness.observer.readings.inNestedWait)
    }

    /// A wait deeper than the loop's home is work (PostgreSQL's `pg_sleep`), and says so to
    /// the next step; under a lock-waiting function it is a lock wait.
    @Test func aNestedWaitIsWork() throws {
        let harness = try Harness()
        let target = harness.target
        target.state = "S"
        target.currentSyscall = target.thread.wait(sp: 0x7ffd_1000, callers: [("ServerLoop", Sites.app + 0x1234, 0x7ffd_1100)])
        _ = harness.probe(at: 0.01)
        target.currentSyscall = target.thread.wait(sp: 0x7ffb_0000, callers: [("pg_sleep", Sites.app + 0x4444, 0x7ffb_0100)])
        #expect(harness.probe(at: 0.02).activity == .blockedCall)
        #expect(harness.observer.readings.inNestedWait)
        target.currentSyscall = target.thread.wait(
            sp: 0x7ffc_0000, callers: [("WaitLatch", Sites.app + 0x5678, 0x7ffc_0100), ("ProcSleep", Sites.app + 0x9abc, 0x7ffc_0200)])
        #expect(harness.probe(at: 0.03).activity == .lockWait)
    }

    /// With no loop known, a supervisor in sigsuspend is parked, not blocked; in the very same
    /// call at two probes in a row it is settled, and the wake-up may sleep on it.
    @Test func aParkedSupervisorIsIdleAndSettles() throws {
        let harness = try Harness()
        let target = harness.target
        target.state = "S"
        target.currentSyscall = .inSyscall(number: 130, arguments: [0, 0, 0, 0, 0, 0], sp: 0x7ffd_2000, pc: 0x7f00_0000_3000)
        #expect(harness.probe(at: 0.01).activity == .idle)
        #expect(harness.wakeUp.lastParked == target.currentSyscall)
        #expect(harness.wakeUp.settledIn == nil, "once is not settled")
        #expect(harness.probe(at: 0.02).activity == .idle)
        #expect(harness.wakeUp.settledIn == target.currentSyscall)
    }

    /// A running thread the last sample caught writing to a file is in I/O; its CPU time goes
    /// into the observation.
    @Test func theLastSamplesHintCorrectsARunningThread() throws {
        let harness = try Harness()
        let target = harness.target
        target.cpuNanos = 7_000_000
        #expect(harness.probe(at: 0.01).activity == .running)
        harness.sampler.hints.io.learn(interruptedSyscall: (1, 5), stopped: true, fileKind: { target.fileKind($0) })
        let observation = harness.probe(at: 0.02)
        #expect(observation.activity == .ioWait)
        #expect(observation.cpuNanos == 7_000_000)
        #expect(harness.observer.readings.syscallNumber == nil)
    }

    /// Gone: no stat to read. The wrapper's reaping, when it came first, is asked how it ended.
    @Test func aProcessWithoutAStatIsGone() throws {
        let harness = try Harness()
        harness.target.state = nil
        harness.target.signal = 9
        #expect(harness.probe(at: 0.01).activity == .gone)
    }
}
