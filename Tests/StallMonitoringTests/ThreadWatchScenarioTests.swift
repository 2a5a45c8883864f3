import StallCapture
import StallDetection
import StallProc
import StallReports
import Testing

@testable import StallMonitoring

/// Whole stalls driven through the watch the agent runs (`ThreadWatch`, wired by the same
/// `ThreadWatch.Roles` as for a real process) on a scripted thread and process, with a manual
/// clock and a fake report sink: attach, loop turns, a slow turn, a nested wait, an exec, an
/// exit mid-stall. No process is started and no real clock is read.
@Suite struct ThreadWatchScenarioTests {
    typealias Sites = WaitSiteClassifierTests
    struct NoWaker: Error {}

    /// What the watch printed and appended, and the clock it reads.
    final class Output {
        var now = 0.0
        var lines: [String] = []
        var health: [LoopHealthSample] = []
    }

    /// The kernel's turn counter with wait stamps, as the harness's thread writes them: an
    /// entry when it starts waiting, an exit when it stops, and quick turns (`turnQuickly`).
    final class StampingCounter: LoopTurnTracker.Counter {
        private(set) var entries: UInt64 = 0
        private var stamps: [WaitStampSummary.Stamp] = []
        var counted: [String] { ["epoll_wait"] }
        func read() -> UInt64? { entries }
        func count(wait name: String) -> Bool { false }
        func drainStamps(home: HomeWaitTracker.Site?) -> WaitStampSummary? {
            defer { stamps.removeAll() }
            return WaitStampSummary(stamps, home: home)
        }

        static func site(_ syscall: ProcSyscallInfo) -> HomeWaitTracker.Site {
            HomeWaitTracker.Site(pc: syscall.programCounter ?? 0, sp: syscall.stackPointer ?? 0)
        }

        func entered(_ syscall: ProcSyscallInfo, at time: Double) {
            entries += 1
            stamps.append(.init(entered: true, time: time, site: Self.site(syscall)))
        }

        func left(_ syscall: ProcSyscallInfo, at time: Double) {
            stamps.append(.init(entered: false, time: time, site: Self.site(syscall)))
        }
    }

    final class Harness {
        let process: ScriptedProcess
        let thread: ScriptedThread
        /// With `stamped`: the counter the watch reads its turns and stamps from.
        let counter: StampingCounter?
        /// Rounds that stepped the watch (the others were left out by its stamps).
        private(set) var steps = 0
        let sink = StallReportFlowTests.FakeSink()
        let output = Output()
        let watch: ThreadWatch
        /// Steps taken until the watch said the thread was gone (nil: not gone).
        private(set) var goneAt: Double?
        private var tick = 0

        /// `stamped`: turns counted by the kernel with wait stamps (`StampingCounter`), as in
        /// a watched family; else the stack rule.
        init(comm: String = "app", stamped: Bool = false) throws {
            process = ScriptedProcess(comm: comm, exe: "/usr/bin/\(comm)", commandLine: [comm, "--serve"])
            thread = ScriptedThread(process: process)
            let counter = stamped ? StampingCounter() : nil
            self.counter = counter
            var options = MonitorOptions()
            options.threshold = 1
            options.loopTurns = stamped ? .kernelCounter : .stackRule
            options.quiet = false
            options.minimumReportInterval = 0
            let output = output
            let log: (String) -> Void = { output.lines.append($0) }
            let resources = ThreadWatch.Roles.Resources(
                process: process, thread: thread, symbolizer: SampleSymbolizer(appFrames: AppFrameRule()),
                classifier: ThreadStateClassifier(extraIdleSyscalls: []), sink: sink,
                turnTracker: try LoopTurnTracker(
                    tid: process.pid, mode: options.loopTurns, hasLoopProbe: false, log: log,
                    openCounter: { _, _ in try counter ?? { throw NoWaker() }() }),
                wakeUp: WakeUpArming(openWaker: { throw NoWaker() }),
                workers: WorkerDelegation(follower: WorkerThreadFollower(target: WorkerThreadFollowerTests.FakeTarget())),
                age: 3600, mainModule: { "app" }, clock: { output.now },
                stamp: HostStamp(wallClock: { 1000 }, monotonic: { 0 }, hostname: { Array("box".utf8) + [0] }))
            let roles = ThreadWatch.Roles(
                options: options, fingerprints: StallFingerprintBook(), joinedAfterStart: false, resources: resources, log: log)
            watch = ThreadWatch(
                target: thread, roles: roles, options: options,
                summary: MonitorSummary(pid: process.pid, name: comm, watchedSeconds: 0, reportDirectory: "/reports"),
                appendLoopHealth: { output.health.append($0) }, log: log)
            watch.begin(at: 0)
        }

        /// The thread does `doing` for `seconds`, stepped every 10 ms as the engine steps an
        /// awake watch (times counted in ticks, so they are the decimals they print as).
        func run(_ doing: ScriptedThread.Doing, for seconds: Double) {
            // Between the last round and the next, as the kernel sees it.
            let now = Double(tick) / 100 + 0.005
            if case .waiting(let syscall) = thread.doing { counter?.left(syscall, at: now) }
            thread.start(doing)
            if case .waiting(let syscall) = doing { counter?.entered(syscall, at: now) }
            rounds(seconds)
        }

        /// The thread, in its wait, turns `perRound` times a round: each turn leaves the wait
        /// and enters it again within the round, between two probes.
        func turnQuickly(for seconds: Double, perRound: Int = 3) {
            guard case .waiting(let syscall) = thread.doing, let counter else { return }
            rounds(seconds) { now in
                for turn in 0..<perRound {
                    let at = now - 0.009 + Double(turn) * 0.003
                    counter.left(syscall, at: at)
                    counter.entered(syscall, at: at + 0.001)
                }
            }
        }

        /// `seconds` of rounds: an engine's, which steps the watch only when it needs it.
        private func rounds(_ seconds: Double, before: (Double) -> Void = { _ in }) {
            for _ in 0..<Int((seconds * 100).rounded()) {
                tick += 1
                let now = Double(tick) / 100
                output.now = now
                process.advance(to: now)
                thread.tick()
                before(now)
                guard goneAt == nil, watch.needsStep(at: now) else { continue }
                steps += 1
                if !watch.step(at: now) { goneAt = now }
            }
        }

        /// The loop's home: `epoll_wait` called from `function` at a fixed stack address.
        func home(_ function: String = "main_loop") -> ScriptedThread.Doing {
            .waiting(thread.waits.wait(sp: 0x7ffd_1000, callers: [(function, Sites.app + 0x1234, 0x7ffd_1100), ("main", Sites.app + 0x2000, 0x7ffd_1200)]))
        }

        /// A wait deeper in the stack than home, from `function` (PostgreSQL's `pg_sleep`).
        func nestedWait(in function: String) -> ScriptedThread.Doing {
            .waiting(
                thread.waits.wait(
                    sp: 0x7ffb_0000,
                    callers: [(function, Sites.app + 0x4444, 0x7ffb_0100), ("main_loop", Sites.app + 0x1234, 0x7ffd_1100)]))
        }
    }

    /// A loop idle at home, one handler busy 1.5 s, home again: one 0x8badf00d stall, its
    /// report written when detected (ongoing) and at its end, named by the handler, 1.5 s long;
    /// the user reads one line when it is detected and one when it ends.
    @Test func aSlowTurnOfALoopIsOneStallFromStartToEnd() throws {
        let harness = try Harness()
        harness.run(harness.home(), for: 0.5)
        #expect(harness.sink.reports.isEmpty)
        harness.run(.running(["compute", "handle_request", "main_loop", "main"]), for: 1.5)
        harness.run(harness.home(), for: 0.5)

        let reports = harness.sink.reports
        let first = try #require(reports.first)
        let last = try #require(reports.last)
        #expect(first.span.ongoing && !last.span.ongoing)
        #expect(reports.allSatisfy { $0.id == 1 && $0.process.name == "app" && $0.hostname == "box" })
        #expect(last.reason == .hang)
        #expect(abs(last.span.durationSeconds - 1.5) <= 0.011, "\(last.span.durationSeconds)")
        #expect(last.culpritName == "compute")
        #expect(harness.sink.finished == [1])
        let summary = harness.watch.summary
        #expect(summary.stalls.map(\.id) == [1])
        #expect(summary.stalls.first?.topFunction == "compute")
        #expect(summary.samples > 0)
        #expect(harness.thread.stops > 0 && harness.thread.stopFreeSamples > 0, "stop-free first, stops past half the threshold")
        #expect(harness.thread.perfSampling == [false, true, false], "kernel samples only through the episode")
        let said = harness.output.lines.filter { $0.contains("stall #1") }
        #expect(said.count == 2, "\(harness.output.lines)")
        #expect(said.first?.contains("stall #1 in app[4242] detected") == true)
        #expect(harness.goneAt == nil)
    }

    /// Short turns under the threshold, many of them: busy episodes, no stall, no report, and
    /// the turns' lengths kept for loop health.
    @Test func shortTurnsAreNoStall() throws {
        let harness = try Harness()
        for _ in 0..<20 {
            harness.run(harness.home(), for: 0.05)
            harness.run(.running(["handle_request", "main_loop", "main"]), for: 0.2)
        }
        harness.run(harness.home(), for: 0.05)
        #expect(harness.sink.reports.isEmpty)
        #expect(harness.watch.summary.stalls.isEmpty)
        #expect(harness.watch.loopHealth.turnLengths.counts.reduce(0, +) == 20)
        #expect(abs(harness.watch.loopHealth.turnLengths.longest - 0.2) <= 0.011)
        #expect(harness.thread.stops == 0, "never stopped under half the threshold")
    }

    /// PostgreSQL's `pg_sleep`: a wait deeper than the loop's home is work. Two seconds in it
    /// are one blocked stall (0xbaadca11) named by the function that waits, and the thread is
    /// never stopped while it sleeps.
    @Test func aNestedWaitIsABlockedStall() throws {
        let harness = try Harness(comm: "postgres")
        harness.run(harness.home("ServerLoop"), for: 0.5)
        harness.run(harness.nestedWait(in: "pg_sleep"), for: 2)
        harness.run(harness.home("ServerLoop"), for: 0.3)
        let last = try #require(harness.sink.reports.last)
        #expect(!last.span.ongoing)
        #expect(last.reason == .blocked)
        #expect(abs(last.span.durationSeconds - 2) <= 0.011, "\(last.span.durationSeconds)")
        #expect(last.culpritName == "pg_sleep")
        #expect(harness.watch.summary.stalls.count == 1)
    }

    /// A process that exec's another program mid-watch: the next look at its identity sees
    /// the new stack base, says so once, and the stall after it is the new program's.
    @Test func anExecMidWatchNamesTheNextStallsProgram() throws {
        let harness = try Harness(comm: "launcher")
        harness.process.at(0.305) { $0.exec("/usr/bin/worker", commandLine: ["worker", "--serve"]) }
        harness.run(harness.home(), for: 1.5)
        #expect(harness.output.lines.contains { $0.contains("launcher [4242] exec'd /usr/bin/worker") }, "\(harness.output.lines)")
        harness.run(.running(["crunch", "main_loop", "main"]), for: 1.2)
        harness.run(harness.home(), for: 0.3)
        let last = try #require(harness.sink.reports.last)
        #expect(last.process.name == "worker")
        #expect(last.culpritName == "crunch")
        #expect(harness.watch.summary.name == "worker")
    }

    /// The process exits in the middle of a stall: the stall ends with it, its last report
    /// says so, and the watch is over.
    @Test func anExitMidStallEndsTheStallAndTheWatch() throws {
        let harness = try Harness()
        harness.run(harness.home(), for: 0.3)
        harness.run(.running(["compute", "main_loop", "main"]), for: 1.4)
        harness.run(.gone, for: 0.1)
        #expect(harness.goneAt == 1.71)
        #expect(harness.watch.finished)
        #expect(harness.watch.summary.targetExited)
        let last = try #require(harness.sink.reports.last)
        #expect(!last.span.ongoing)
        #expect(harness.watch.summary.stalls.count == 1)
        #expect(!harness.watch.step(at: 2), "a finished watch is not stepped")
    }

    /// A watched family's loop that turns three times a round (a backend under pgbench):
    /// its stamps say so, and it is probed about twice a second, not every round. Then one
    /// handler busy 1.5 s: one stall, dated from the stamped exit and ended at the stamped
    /// entry, exact to the tick; the turns are all counted.
    @Test func aStampedLoopTurningFastIsProbedRarelyAndItsSlowTurnIsExact() throws {
        let harness = try Harness(stamped: true)
        harness.run(harness.home(), for: 0.5)
        let settled = harness.steps
        harness.turnQuickly(for: 2)
        let quick = harness.steps - settled
        #expect(quick <= 8, "200 rounds of quick turns: \(quick) probes")
        #expect(harness.sink.reports.isEmpty)
        harness.run(.running(["compute", "handle_request", "main_loop", "main"]), for: 1.5)
        harness.run(harness.home(), for: 0.5)
        harness.turnQuickly(for: 1)

        let last = try #require(harness.sink.reports.last)
        #expect(harness.sink.reports.allSatisfy { $0.id == 1 })
        #expect(last.reason == .hang && !last.span.ongoing)
        #expect(abs(last.span.durationSeconds - 1.5) <= 0.001, "\(last.span.durationSeconds)")
        #expect(last.culpritName == "compute")
        #expect(harness.watch.loopTurnCount >= 2 * 100 * 3, "every quick turn counted: \(harness.watch.loopTurnCount)")
    }

    /// The same loop, then a request that sleeps in a wait nested in its work (pg_sleep): one
    /// blocked stall from the moment the stamps saw it leave its home wait.
    @Test func aStampedLoopsNestedWaitIsABlockedStallFromItsHomeExit() throws {
        let harness = try Harness(stamped: true)
        harness.run(harness.home(), for: 0.5)
        harness.turnQuickly(for: 1)
        harness.run(.running(["parse", "handle_request", "main_loop", "main"]), for: 0.05)
        harness.run(harness.nestedWait(in: "pg_sleep"), for: 1.45)
        harness.run(harness.home(), for: 0.5)

        let last = try #require(harness.sink.reports.last)
        #expect(harness.sink.reports.allSatisfy { $0.id == 1 })
        #expect(last.reason == .blocked)
        #expect(abs(last.span.durationSeconds - 1.5) <= 0.001, "\(last.span.durationSeconds)")
    }

    /// A new process whose first stamps are its stall's (its counters opened while it sat in
    /// its wait, and it never turned before the request): the home its probes saw is what the
    /// stamps are added up against, so the stall ends at the stamped entry, not at the probe
    /// after it.
    @Test func aStallInTheFirstStampsEndsAtTheStampedEntry() throws {
        let harness = try Harness(stamped: true)
        harness.run(harness.home(), for: 0.3)
        harness.run(harness.nestedWait(in: "pg_sleep"), for: 1.5)
        harness.run(harness.home(), for: 0.3)

        let last = try #require(harness.sink.reports.last)
        #expect(last.reason == .blocked && !last.span.ongoing)
        #expect(abs(last.span.durationSeconds - 1.5) <= 0.001, "\(last.span.durationSeconds)")
    }
}
