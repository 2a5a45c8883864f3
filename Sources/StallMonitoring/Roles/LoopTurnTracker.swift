import StallDetection
import StallProc

/// Counts the loop's turns with the best evidence the target and the kernel allow, and opens
/// the kernel counters once a loop shows itself.
final class LoopTurnTracker {
    /// A source of turn counts: the kernel's per-thread counters (`LoopTurnCounter`), or a fake
    /// in tests.
    protocol Counter: AnyObject {
        /// The waits counted (reopened with the same set after a rest).
        var counted: [String] { get }
        func read() -> UInt64?
        @discardableResult func count(wait name: String) -> Bool
        /// The counted waits' entries and exits since the last call, added up against `home`
        /// (nil: not stamped; see `LoopTurnCounter.drainStamps`).
        func drainStamps(home: HomeWaitTracker.Site?) -> WaitStampSummary?
    }

    // Loop turns (docs/architecture.md, "Detection model"): the evidence in use, and why it is not a better one.
    private(set) var evidence: LoopTurnEvidence
    private(set) var note: String?
    /// `--loop-turns auto` without a loop probe: the kernel counters are opened when the thread
    /// is first seen idle in a loop's wait (`LoopTurnCounter.tracepointNames`), counting that
    /// wait alone, or when a busy episode outside the batch rule is half a threshold old,
    /// counting every wait (a loop saturated from the start is never seen idle, and the stack
    /// rule knows no loop frames yet); the stack rule decides until then. Counters cost the
    /// thread at every context switch, and a process that never waits in a loop (a test
    /// runner, a shell in wait4, a compiler under `make`) gets nothing from them: wrapped
    /// pytest ran 1.38× slower with them, 1.07× without. A wait the loop is seen idle in later
    /// is added to the counted set (`LoopTurnCounter.count(wait:)`).
    private(set) var countersAwaitIdle = false
    private var counter: Counter?
    private var lastCount: UInt64?
    /// While the counters rest (see `rest`): the waits to count again once the thread is seen
    /// busy.
    private(set) var restingWaits: Set<String>?
    /// How long a thread must have gone unseen busy before its counters rest. A server under
    /// steady load is caught busy at most wake-ups: resting at every sleep closed and reopened
    /// each backend's counters many times a second (PostgreSQL under pgbench: 15.8 % of a
    /// core for the agent against 7.6 %).
    static let restAfter = 1.0
    /// When a probe last found the thread busy (the watch's start until then).
    private var lastSeenBusy = 0.0
    /// Loop turns seen (exact with the counter or probe; a lower bound with the stack rule, and
    /// while the counters rest).
    private(set) var turns: UInt64 = 0
    private var idleEntries: UInt64 = 0
    /// When a probe last found the thread idle or stopped (the watch's start until then).
    private var lastSeenNotBusy = 0.0
    private let tid: Int32
    private let log: (String) -> Void
    private let openCounter: (_ tid: Int32, _ waits: Set<String>?) throws -> Counter

    init(
        tid: Int32, mode: LoopTurnMode, hasLoopProbe: Bool, log: @escaping (String) -> Void,
        stamped: Bool = false,
        openCounter: ((_ tid: Int32, _ waits: Set<String>?) throws -> Counter)? = nil
    ) throws {
        self.tid = tid
        self.log = log
        let openCounter = openCounter ?? { try LoopTurnCounter(tid: $0, waits: $1, stamped: stamped) }
        self.openCounter = openCounter
        (evidence, counter, note) = try Self.choose(tid: tid, mode: mode, hasLoopProbe: hasLoopProbe, open: openCounter)
        countersAwaitIdle = mode == .auto && !hasLoopProbe
        if let note { log("stallagent: loop turns: \(note)") }
    }

    /// The best loop-turn evidence the target and the kernel allow. A refused counter is not an
    /// error unless the user asked for counters: the stack rule takes over, said once.
    private static func choose(
        tid: Int32, mode: LoopTurnMode, hasLoopProbe: Bool, open: (_ tid: Int32, _ waits: Set<String>?) throws -> Counter
    ) throws -> (LoopTurnEvidence, Counter?, String?) {
        switch mode {
        case .stackRule: return (.stackRule, nil, nil)
        case .auto where hasLoopProbe: return (.loopProbe, nil, nil)
        // Until the thread is first seen idle: see `countersAwaitIdle`.
        case .auto: return (.stackRule, nil, nil)
        case .kernelCounter:
            do {
                return (.kernelCounter, try open(tid, nil), nil)
            } catch let unavailable as LoopTurnCounter.Unavailable {
                if mode == .kernelCounter {
                    throw StallAgentError.invalidArgument("--loop-turns kernel-counter: \(unavailable)")
                }
                return (.stackRule, nil, "kernel counters unavailable: \(unavailable); using the stack rule")
            }
        }
    }

    /// The waits the loop-turn counters can count, by syscall number.
    static let loopWaits: [Int: String] = Dictionary(
        LoopTurnCounter.tracepointNames.compactMap { name in ProcSyscallInfo.number(ofSyscall: name).map { ($0, name) } },
        uniquingKeysWith: { a, _ in a })

    /// Loop turns seen so far (see `turns`); the stack rule's come from the detector.
    func count(stackRuleTurns: Int) -> UInt64 {
        evidence == .stackRule ? idleEntries &+ UInt64(stackRuleTurns) : turns
    }

    /// The watch begins: not seen idle yet.
    func begin(at now: Double) {
        lastSeenNotBusy = now
        lastSeenBusy = now
    }

    /// Reads the counter, if one is open: true when the loop turned since the last read.
    func readCounter() -> Bool {
        var turned = false
        if let counter, let count = counter.read() {
            if let last = lastCount, count != last {
                turned = true
                turns &+= count &- last
            }
            lastCount = count
        }
        return turned
    }

    /// The stamps of the open counter since the last call (nil: no counter, or not stamped).
    func drainStamps(home: HomeWaitTracker.Site?) -> WaitStampSummary? {
        counter?.drainStamps(home: home)
    }

    /// With a counter open, true while it has not moved since the last read.
    func counterUnchanged() -> Bool {
        counter.map { $0.read() == lastCount } ?? true
    }

    /// Turns the loop probe counted.
    func addProbeTurns(_ count: UInt64) {
        turns &+= count
    }

    /// A probe's activity (`previous`: the one before it).
    func noteProbe(_ activity: ThreadActivity, previous: ThreadActivity?, at time: Double) {
        if activity == .idle, previous != .idle { idleEntries &+= 1 }
        if !activity.isBusy { lastSeenNotBusy = time } else { lastSeenBusy = time }
    }

    /// The agent sleeps on the thread, settled in its wait: once it has not been seen busy for
    /// `restAfter`, its counters rest (close). While any system-call tracepoint event exists,
    /// every system call of every thread on the host takes the kernel's slow path
    /// (docs/architecture.md, "What the tracepoints cost the host"), and a loop asleep needs no
    /// count: the wake-up says when it leaves its wait. They open again when a probe finds it
    /// busy (`afterProbe`); the anchors make both cheap (two system calls).
    func rest(at now: Double) {
        guard let counter, now - lastSeenBusy >= Self.restAfter else { return }
        restingWaits = Set(counter.counted)
        self.counter = nil
        lastCount = nil
    }

    /// The agent woke because the thread left its wait while the counters rested, and the probe
    /// found it back in a wait: it turned at least once, uncounted.
    func noteRestedTurn() {
        guard restingWaits != nil else { return }
        turns &+= 1
    }

    /// After a probe that found the thread in `activity`, in `syscallNumber`: opens the counters
    /// if they await a loop and one showed itself (a loop's wait, or `wanted`), or adds the wait
    /// to those counted. True when the counters opened now: the detector must take them.
    func afterProbe(_ activity: ThreadActivity, syscallNumber: Int?, stackRuleTurns: Int, wanted: () -> Bool) -> AfterProbe {
        if let waits = restingWaits {
            return activity.isBusy ? reopenCounters(waits: waits) : .unchanged
        }
        let loopWait = activity == .idle && (countersAwaitIdle || counter != nil) ? syscallNumber.flatMap { Self.loopWaits[$0] } : nil
        if countersAwaitIdle {
            if let loopWait {
                return openCountersNow(waits: [loopWait], stackRuleTurns: stackRuleTurns) ? .countersOpened : .unchanged
            } else if wanted() {
                return openCountersNow(waits: nil, stackRuleTurns: stackRuleTurns) ? .countersOpened : .unchanged
            }
        } else if let loopWait, let counter {
            counter.count(wait: loopWait)
        }
        return .unchanged
    }

    /// What `afterProbe` changed that the detector must take.
    enum AfterProbe: Equatable {
        case unchanged
        /// The kernel counts the turns from now on.
        case countersOpened
        /// The counters could not open again after a rest: the stack rule decides from now on.
        case fellBackToStackRule
    }

    /// The thread is busy again after its counters rested: they count from now. The turn in
    /// progress began when the wake-up saw the thread leave its wait, which the detector already
    /// took. Refused now (out of descriptors, the thread exiting), the stack rule takes over:
    /// a counter that reads nothing would make every busy stretch look like one endless turn.
    private func reopenCounters(waits: Set<String>) -> AfterProbe {
        restingWaits = nil
        do {
            let counter = try openCounter(tid, waits)
            if let count = counter.read() {
                self.counter = counter
                lastCount = count
                return .unchanged
            }
            note = "kernel counters could not be read again after resting; using the stack rule"
        } catch StallAgentError.noSuchProcess {
            // Exiting as it left its wait (a server shut down): the next probe sees it gone.
            // Said as a fallback, it put "turns from the stack rule" in the exit summary of a
            // process counted by the kernel all along.
            return .unchanged
        } catch {
            note = "kernel counters could not open again after resting (\(error)); using the stack rule"
        }
        log("stallagent: loop turns: \(note!)")
        evidence = .stackRule
        return .fellBackToStackRule
    }

    /// A busy episode the batch rule does not judge, half a threshold old, or a thread outside
    /// the batch rule not seen idle for half a threshold: see `countersAwaitIdle`. The second
    /// because the stack rule may end each episode of a saturated loop (its samples differ)
    /// long before one is half a threshold old; beside two CPU hogs it did so for a whole
    /// 5 s run, and the loop was never counted.
    func counterWanted(at now: Double, phase: StallPhase, threshold: Double, episodeAge: Double?) -> Bool {
        guard phase != .batch else { return false }
        if let age = episodeAge, age * 2 >= threshold { return true }
        return (now - lastSeenNotBusy) * 2 >= threshold
    }

    /// From now on the kernel counts the loop's turns (see `countersAwaitIdle`); the turns the
    /// stack rule counted so far stay in the total. A refusal is said once and the stack rule
    /// stays; a thread that exited meanwhile is seen gone by the next probe.
    private func openCountersNow(waits: Set<String>?, stackRuleTurns: Int) -> Bool {
        countersAwaitIdle = false
        do {
            let counter = try openCounter(tid, waits)
            guard let count = counter.read() else { return false }
            turns = self.count(stackRuleTurns: stackRuleTurns)
            evidence = .kernelCounter
            self.counter = counter
            lastCount = count
            return true
        } catch let unavailable as LoopTurnCounter.Unavailable {
            note = "kernel counters unavailable: \(unavailable); using the stack rule"
            log("stallagent: loop turns: \(note!)")
        } catch {}
        return false
    }
}

extension LoopTurnCounter: LoopTurnTracker.Counter {}
