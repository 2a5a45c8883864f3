import Testing

@testable import StallMonitoring
import StallDetection
import StallProc

/// Which evidence counts the loop's turns and when the kernel counters open, with a fake counter.
@Suite struct LoopTurnTrackerTests {
    final class FakeCounter: LoopTurnTracker.Counter {
        var value: UInt64? = 100
        var waits: [String] = []
        var counted: [String] { waits }
        func read() -> UInt64? { value }
        func count(wait name: String) -> Bool {
            waits.append(name)
            return true
        }
        func drainStamps(home: HomeWaitTracker.Site?) -> WaitStampSummary? { nil }
    }

    final class Opener {
        var opened: [Set<String>?] = []
        var refusal: LoopTurnCounter.Unavailable?
        /// The thread exited: what the kernel answers then.
        var gone = false
        let counter = FakeCounter()
        func open(_ tid: Int32, _ waits: Set<String>?) throws -> LoopTurnTracker.Counter {
            if let refusal { throw refusal }
            if gone { throw StallAgentError.noSuchProcess(pid: tid) }
            opened.append(waits)
            return counter
        }
    }

    static let epollWait = ProcSyscallInfo.number(ofSyscall: "epoll_wait")!

    static func tracker(_ mode: LoopTurnMode = .auto, hasLoopProbe: Bool = false, opener: Opener, log: @escaping (String) -> Void = { _ in })
        throws -> LoopTurnTracker
    {
        try LoopTurnTracker(tid: 42, mode: mode, hasLoopProbe: hasLoopProbe, log: log, openCounter: opener.open)
    }

    @Test func theEvidenceFollowsTheModeAndTheProbe() throws {
        let opener = Opener()
        #expect(try Self.tracker(.stackRule, opener: opener).evidence == .stackRule)
        #expect(try Self.tracker(.auto, hasLoopProbe: true, opener: opener).evidence == .loopProbe)
        #expect(try !Self.tracker(.auto, hasLoopProbe: true, opener: opener).countersAwaitIdle)
        let auto = try Self.tracker(.auto, opener: opener)
        #expect(auto.evidence == .stackRule)
        #expect(auto.countersAwaitIdle)
        #expect(opener.opened.isEmpty)
        #expect(try Self.tracker(.kernelCounter, opener: opener).evidence == .kernelCounter)
        #expect(opener.opened.count == 1)
    }

    /// Counters asked for and refused: an error, not a silent fallback.
    @Test func refusedCountersAskedForAreAnError() {
        let opener = Opener()
        opener.refusal = .noTracepoints
        #expect(throws: StallAgentError.self) { try Self.tracker(.kernelCounter, opener: opener) }
    }

    /// First seen idle in a loop's wait: the counters open for that wait alone, and the stack
    /// rule's turns so far stay in the total.
    @Test func countersOpenAtTheFirstLoopWaitSeenIdle() throws {
        let opener = Opener()
        let tracker = try Self.tracker(opener: opener)
        tracker.begin(at: 0)
        tracker.noteProbe(.idle, previous: nil, at: 0.1)
        #expect(tracker.count(stackRuleTurns: 2) == 3)
        let opened = tracker.afterProbe(.idle, syscallNumber: Self.epollWait, stackRuleTurns: 2, wanted: { false })
        #expect(opened == .countersOpened)
        #expect(opener.opened == [["epoll_wait"]])
        #expect(tracker.evidence == .kernelCounter)
        #expect(!tracker.countersAwaitIdle)
        #expect(tracker.count(stackRuleTurns: 50) == 3)
        // Turns are the counter's from now on.
        #expect(!tracker.readCounter())
        opener.counter.value = 105
        #expect(tracker.readCounter())
        #expect(tracker.count(stackRuleTurns: 50) == 8)
        // What a wake-up armed on the wait checks: the count has not moved since the last read.
        #expect(tracker.counterUnchanged())
        opener.counter.value = 106
        #expect(!tracker.counterUnchanged())
        #expect(tracker.readCounter())
        #expect(tracker.counterUnchanged())
        #expect(tracker.count(stackRuleTurns: 50) == 9)
        // Another loop wait seen idle later is counted too.
        let ppoll = ProcSyscallInfo.number(ofSyscall: "ppoll")!
        #expect(tracker.afterProbe(.idle, syscallNumber: ppoll, stackRuleTurns: 0, wanted: { true }) == .unchanged)
        #expect(opener.counter.waits == ["ppoll"])
    }

    /// Commit 9c73be3: a loop saturated from its start is never seen idle, and the stack rule
    /// may end each of its episodes early: the counters are wanted once the thread was not seen
    /// idle for half a threshold, or an episode is half a threshold old; never under the batch rule.
    @Test func countersAreWantedAfterHalfAThresholdNotSeenIdle() throws {
        let tracker = try Self.tracker(opener: Opener())
        tracker.begin(at: 10)
        #expect(!tracker.counterWanted(at: 10.9, phase: .loop, threshold: 2, episodeAge: nil))
        #expect(tracker.counterWanted(at: 11, phase: .loop, threshold: 2, episodeAge: nil))
        #expect(!tracker.counterWanted(at: 11, phase: .batch, threshold: 2, episodeAge: nil))
        tracker.noteProbe(.idle, previous: .running, at: 10.8)
        #expect(!tracker.counterWanted(at: 11, phase: .loop, threshold: 2, episodeAge: nil))
        #expect(tracker.counterWanted(at: 11, phase: .loop, threshold: 2, episodeAge: 1))
        // Busy probes do not move the last time seen idle; a stopped one does.
        tracker.noteProbe(.running, previous: .idle, at: 11.5)
        #expect(tracker.counterWanted(at: 11.8, phase: .loop, threshold: 2, episodeAge: 0.1))
        tracker.noteProbe(.stopped, previous: .running, at: 11.8)
        #expect(!tracker.counterWanted(at: 11.9, phase: .loop, threshold: 2, episodeAge: nil))
    }

    @Test func wantedCountersCountEveryWait() throws {
        let opener = Opener()
        let tracker = try Self.tracker(opener: opener)
        #expect(tracker.afterProbe(.running, syscallNumber: nil, stackRuleTurns: 0, wanted: { false }) == .unchanged)
        #expect(opener.opened.isEmpty)
        #expect(tracker.afterProbe(.running, syscallNumber: nil, stackRuleTurns: 0, wanted: { true }) == .countersOpened)
        #expect(opener.opened == [nil])
    }

    /// A refusal is said once, and the stack rule stays.
    @Test func refusedCountersLeaveTheStackRuleAndSaySo() throws {
        let opener = Opener()
        opener.refusal = .notPermitted("EACCES")
        var lines: [String] = []
        let tracker = try Self.tracker(opener: opener, log: { lines.append($0) })
        #expect(tracker.afterProbe(.idle, syscallNumber: Self.epollWait, stackRuleTurns: 0, wanted: { true }) == .unchanged)
        #expect(tracker.evidence == .stackRule)
        #expect(!tracker.countersAwaitIdle)
        #expect(tracker.note?.hasPrefix("kernel counters unavailable: perf_event_open on syscall tracepoints was refused (EACCES)") == true)
        #expect(lines.count == 1)
        #expect(tracker.afterProbe(.idle, syscallNumber: Self.epollWait, stackRuleTurns: 0, wanted: { true }) == .unchanged)
        #expect(lines.count == 1)
    }

    /// With the stack rule, turns are idle entries plus the detector's stack-rule turns.
    @Test func stackRuleTurnsAreIdleEntriesAndTheDetectors() throws {
        let tracker = try Self.tracker(.stackRule, opener: Opener())
        tracker.noteProbe(.idle, previous: nil, at: 1)
        tracker.noteProbe(.idle, previous: .idle, at: 2)
        tracker.noteProbe(.running, previous: .idle, at: 3)
        tracker.noteProbe(.idle, previous: .running, at: 4)
        #expect(tracker.count(stackRuleTurns: 3) == 5)
        #expect(tracker.afterProbe(.idle, syscallNumber: Self.epollWait, stackRuleTurns: 0, wanted: { true }) == .unchanged)
        #expect(tracker.evidence == .stackRule)
    }

    /// The host-wide tax (docs/architecture.md, "What the tracepoints cost the host"): a thread
    /// the agent sleeps on rests its counters once calm for `restAfter`; a wake-up that finds it back in its wait is one
    /// uncounted turn; a probe that finds it busy opens them again for the same waits.
    @Test func countersRestOnAThreadAsleepAndOpenAgainWhenItIsBusy() throws {
        let opener = Opener()
        let tracker = try Self.tracker(opener: opener)
        tracker.begin(at: 0)
        tracker.noteProbe(.running, previous: nil, at: 0.1)
        tracker.noteProbe(.idle, previous: .running, at: 0.2)
        #expect(tracker.afterProbe(.idle, syscallNumber: Self.epollWait, stackRuleTurns: 0, wanted: { false }) == .countersOpened)
        opener.counter.waits = ["epoll_wait"]
        tracker.noteProbe(.idle, previous: .idle, at: 0.3)
        tracker.rest(at: 0.3)
        #expect(tracker.restingWaits == nil, "seen busy 0.2 s ago")
        #expect(tracker.readCounter() == false)
        tracker.rest(at: 1.1)
        #expect(tracker.restingWaits == ["epoll_wait"])
        #expect(tracker.evidence == .kernelCounter)
        #expect(!tracker.readCounter())
        #expect(tracker.counterUnchanged())
        let before = tracker.count(stackRuleTurns: 0)
        tracker.noteRestedTurn()
        #expect(tracker.count(stackRuleTurns: 0) == before + 1)
        #expect(tracker.afterProbe(.idle, syscallNumber: Self.epollWait, stackRuleTurns: 0, wanted: { true }) == .unchanged)
        #expect(opener.opened.count == 1)
        #expect(tracker.afterProbe(.running, syscallNumber: nil, stackRuleTurns: 0, wanted: { false }) == .unchanged)
        #expect(opener.opened == [["epoll_wait"], ["epoll_wait"]])
        #expect(tracker.restingWaits == nil)
        opener.counter.value = 103
        #expect(tracker.readCounter())
        #expect(tracker.count(stackRuleTurns: 0) == before + 4)
        // Not resting: a wake-up found idle is counted by the kernel, not guessed.
        tracker.noteRestedTurn()
        #expect(tracker.count(stackRuleTurns: 0) == before + 4)
    }

    /// A tracker counting with the kernel whose counters rest (idle since 2 s), and what it says.
    final class Said { var lines: [String] = [] }
    static func restingTracker(_ opener: Opener, _ said: Said) throws -> LoopTurnTracker {
        let tracker = try Self.tracker(.kernelCounter, opener: opener, log: { said.lines.append($0) })
        tracker.begin(at: 0)
        tracker.noteProbe(.idle, previous: nil, at: 2)
        tracker.rest(at: 2)
        return tracker
    }

    /// Counters that cannot open again after a rest: the stack rule decides, said once, rather
    /// than a counter that never moves making every busy stretch one endless turn.
    @Test func countersRefusedAfterARestFallBackToTheStackRule() throws {
        let opener = Opener()
        let said = Said()
        let tracker = try Self.restingTracker(opener, said)
        #expect(tracker.restingWaits != nil)
        opener.refusal = .failed("EMFILE")
        #expect(tracker.afterProbe(.running, syscallNumber: nil, stackRuleTurns: 0, wanted: { false }) == .fellBackToStackRule)
        #expect(tracker.evidence == .stackRule)
        #expect(said.lines.count == 1 && said.lines[0].contains("using the stack rule"))
        #expect(tracker.afterProbe(.running, syscallNumber: nil, stackRuleTurns: 0, wanted: { false }) == .unchanged)
    }

    /// A thread that exits as it leaves its wait cannot have its counters back: that is its
    /// end, not a reason to fall back (redis-server shut down while its counters rested).
    @Test func aThreadGoneAfterARestKeepsItsEvidenceAndSaysNothing() throws {
        let opener = Opener()
        let said = Said()
        let tracker = try Self.restingTracker(opener, said)
        opener.gone = true
        #expect(tracker.afterProbe(.running, syscallNumber: nil, stackRuleTurns: 0, wanted: { false }) == .unchanged)
        #expect(tracker.evidence == .kernelCounter)
        #expect(said.lines.isEmpty)
    }
}
