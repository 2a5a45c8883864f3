import Foundation

import StallDetection
import StallProc
import StallReports
import StallCapture
import StallSymbols

/// One watched main thread, stepped: the probe made into an observation, fed to the detector
/// with the corrections the kernel's clocks allow, a stack sampled when the detector asks, the
/// identity looked at again, loop health recorded, the wake-up armed while the thread sleeps.
/// It reads the process only through its roles and a narrow `Target`, so a unit test drives a
/// whole stall through a scripted fake with no process and no clock (docs/architecture.md,
/// "Layout: the package's targets"). `StallMonitor` builds it for a real pid and keeps the
/// public face.
final class ThreadWatch {
    /// What the step reads of the process besides its roles: the `InspectedTarget`, or a fake.
    protocol Target: AnyObject {
        /// Kernel stack samples on (a busy episode) or off.
        func setPerfSampling(busy: Bool)
        /// Threads of the process still alive, once its main thread is gone.
        func liveThreadCount() -> Int
        /// Every module mapped in the process, as reports list them.
        func binaryImages() -> [ReportBinaryImage]
        /// A sampled frame named in full for a report (see `SampleSymbolizer.resolve`).
        func resolveFrame(_ frame: SampledFrame, index: Int) -> SymbolizedFrame
        /// The owner of the lock the main thread waits on (see `LockOwnerLookup`).
        func lockOwner() -> ReportLockOwner?
        /// The main thread's name and stack base from its stat file (an exec moves the base).
        func statIdentity() -> (name: String, startStack: UInt64?)?
        /// The main thread's syscall file, read before the wake-up is armed.
        func syscall() -> ProcSyscallInfo?
        /// Gives the probe files' descriptors back while the thread sleeps.
        func releaseProbeFiles()
    }

    let options: MonitorOptions
    private let target: Target
    private var roles: Roles
    /// Time per state, turn lengths and loop health lines (see the type).
    var loopHealth = LoopHealthRecorder()
    var summary: MonitorSummary
    /// True once the target exited or `stop` was called.
    private(set) var finished = false
    /// What the kernel's wait stamps said since the last step (see the type).
    private var stamps = StampedTurns()
    /// Where loop health lines go (the report directory's file).
    private let appendLoopHealth: (LoopHealthSample) -> Void
    private let log: (String) -> Void

    init(
        target: Target, roles: Roles, options: MonitorOptions, summary: MonitorSummary,
        appendLoopHealth: @escaping (LoopHealthSample) -> Void, log: @escaping (String) -> Void
    ) {
        self.target = target
        self.roles = roles
        self.options = options
        glanceMargin = 2 * options.probeInterval
        glanceEvery = 3 * options.probeInterval
        self.summary = summary
        self.appendLoopHealth = appendLoopHealth
        self.log = log
    }

    var flow: StallReportFlow { roles.flow }
    var detector: StallDetector { roles.flow.detector }
    var identity: IdentityActing { roles.identity }
    var turnTracker: LoopTurnTracker { roles.turnTracker }
    var loopProbeEdges: LoopProbeInterpreter { roles.loopProbeEdges }
    var sampleSymbolizer: SampleSymbolizer { roles.sampleSymbolizer }
    var watchStartTime: Double { roles.watchStart.time }

    /// Loop turns seen so far (see `LoopTurnTracker.turns`), for metrics.
    var loopTurnCount: UInt64 { turnTracker.count(stackRuleTurns: detector.stackRuleTurns) }

    /// What the process has shown itself to be so far (see `ProcessKind`).
    var kind: ProcessKind {
        roles.observer.waitSites.kind(
            countedTurns: turnTracker.evidence != .stackRule && turnTracker.turns > 0, batch: options.batchThreshold != nil)
    }

    func begin(at now: Double) {
        roles.watchStart.begin(at: now)
        turnTracker.begin(at: now)
        identity.begin(at: now)
    }

    /// Whether this round must probe the thread: false while the kernel's wait stamps show it
    /// turning through its home wait (see `StampedTurns`). Reads memory only.
    func needsStep(at now: Double) -> Bool {
        guard !finished else { return true }
        // Left in its wait at the last glance: not looked at again before then.
        if now < glanceAgain { return false }
        guard drainStamps() else { return true }
        // Armed to record when it leaves its wait: the next step reads the record, which
        // says only the first exit after the arming; rounds left out would make it stale.
        if roles.wakeUp.recording { return true }
        let needed = stamps.needsStep(
            at: now, margin: glanceMargin, mayGlance: afterStep.mayGlance, episodeOpen: afterStep.episodeOpen)
        if !needed { glanceAgain = stamps.nextGlance(after: now, every: glanceEvery) }
        return needed
    }

    /// What the last step left that a glance needs: only a step changes it, and reading it off
    /// the detector (a value) at every glance copied the detector each time.
    private var afterStep = (mayGlance: false, episodeOpen: false)
    private let glanceMargin: Double
    /// How often a thread left in its home wait has its stamps looked at (`StampedTurns.nextGlance`).
    private let glanceEvery: Double
    /// Not before this time (set by a glance; a step clears it).
    private var glanceAgain = -Double.infinity

    /// Takes the stamps since the last drain; false when there are none to take (not stamped).
    @discardableResult
    private func drainStamps() -> Bool {
        guard let drained = turnTracker.drainStamps(home: stamps.home) else { return false }
        stamps.take(drained, isHome: { roles.observer.isKnownHome(raw: $0) })
        return true
    }

    /// One probe and, when due, one sample. Returns false once the target is gone.
    @discardableResult
    func step(at now: Double) -> Bool {
        guard !finished else { return false }
        let (wakeUp, observer, sampler) = (roles.wakeUp, roles.observer, roles.sampler)
        wakeUp.beginStep()
        glanceAgain = -.infinity
        drainStamps()
        let stamped = stamps.beginStep(at: now, isHome: { observer.isKnownHome(raw: $0) })
        // Stamped leaving its home wait since the last probe (the last such exit), or woken by
        // the kernel (the first exit after the arming).
        let wokeAt = wakeUp.takeLeftWait()
        let leftWait = stamped.leftHome ?? wokeAt
        let turned = turnTracker.readCounter()
        let wasNested = observer.readings.inNestedWait
        let (cpuBefore, runQueueBefore) = (observer.observedCPUNanos, observer.observedRunQueueNanos)
        // An episode open at the last probe ended when the stamps saw the thread enter its home
        // wait again: a turn, at the kernel's time, before anything this probe adds.
        if let entry = stamped.lastHomeEntry, detector.isInEpisode, let last = loopHealth.lastObservation, entry > last.time,
            entry < now
        {
            flow.feed(in: self) {
                $0.observe(
                    ThreadObservation(time: entry, activity: .idle, cpuNanos: cpuBefore, runQueueNanos: runQueueBefore),
                    loopTurned: true)
            }
            loopHealth.observe(at: entry, .idle)
        }
        var observation = observer.observe(at: now, turned: turned, in: self)
        if let home = observer.lastHomeSite, home != stamps.home { stamps.learnHome(home) }
        if let state = loopProbeEdges.read() {
            observation = applyLoopProbe(state, to: observation)
        }
        // A compiled descendant busy at the first probe was so since it started: nothing ran
        // on its thread before (CPU and run-queue time 0 at birth).
        if let born = roles.watchStart.takeBirth(), loopHealth.lastObservation == nil, observation.activity.isBusy,
            born < observation.time
        {
            flow.feed(in: self) { $0.observe(ThreadObservation(time: born, activity: observation.activity, cpuNanos: 0, runQueueNanos: 0)) }
            loopHealth.observe(at: born, observation.activity)
        }
        // Woken from its wait and busy now: the work began when the kernel saw it leave the
        // wait, not at this probe, which a loaded agent makes late (a 2 s pg_sleep in a backend
        // of PostgreSQL under pgbench was reported as 1.86 s).
        var startedAtStampedExit = false
        if let left = leftWait, observation.activity.isBusy, !detector.isInEpisode,
            let last = loopHealth.lastObservation, last.activity == .idle, left > last.time, left < observation.time
        {
            flow.feed(in: self) {
                $0.observe(
                    ThreadObservation(time: left, activity: observation.activity, cpuNanos: cpuBefore, runQueueNanos: runQueueBefore))
            }
            // Idle until it left: `last` was idle.
            loopHealth.observe(at: left, observation.activity)
            startedAtStampedExit = left == stamped.leftHome
        }
        // Entries into a nested wait (pg_sleep's WaitLatch) move the counter too: they are not
        // turns of the loop. Nor are the turns the stamps put before the exit the work began
        // at: the counter cannot say they came first.
        flow.feed(in: self) {
            $0.observe(observation, loopTurned: turned && !startedAtStampedExit && !wasNested && !observer.readings.inNestedWait)
        }
        if leftWait != nil, observation.activity == .idle { turnTracker.noteRestedTurn() }
        turnTracker.noteProbe(observation.activity, previous: loopHealth.lastObservation?.activity, at: observation.time)
        switch turnTracker.afterProbe(
            observation.activity, syscallNumber: observer.readings.syscallNumber, stackRuleTurns: detector.stackRuleTurns,
            wanted: { counterWanted(at: now) })
        {
        case .unchanged: break
        case .countersOpened: flow.update { $0.useLoopTurnEvidence(.kernelCounter) }
        case .fellBackToStackRule: flow.update { $0.useLoopTurnEvidence(.stackRule) }
        }
        if !observation.activity.isBusy { sampler.hints.io.clear() }
        // On for the rest of a busy episode once it has lasted two probe intervals (a thread
        // that blocks now and then would otherwise turn it off and on every probe). Not from its
        // start: each switch is an interrupt to the thread's CPU, and most episodes of a busy
        // server end sooner (PostgreSQL under pgbench -S: a twelfth of the agent's time went to
        // switching). Batch processes are sampled by ptrace, as few as they are.
        target.setPerfSampling(
            busy: detector.isInEpisode && detector.phase != .batch
                && (detector.episodeAge ?? 0) >= 2 * options.probeInterval)
        loopProbeEdges.fed(at: observation.time)
        loopHealth.observe(at: observation.time, observation.activity)
        if observation.activity == .gone {
            end(gone: now)
            return false
        }
        if detector.wantsSample(at: now) { sample(at: now, observation.activity) }
        if detector.isStalled { flow.checkKillAfter(at: now) }
        if identity.checkIfDue(at: now, in: self) {
            for notice in InflationBudget.shared.drainNotices() { log("stallagent: " + notice) }
        }
        identity.settleIfDue(at: now, in: self)
        if loopHealth.isDue(at: now) { recordLoopHealth(at: now) }
        if flow.publisher.hasUnwrittenFinals { flow.publisher.retryFinalReports(at: now, final: false) }
        afterStep = (
            detector.phase != .batch && turnTracker.evidence == .kernelCounter && !flow.publisher.hasUnwrittenFinals,
            detector.isInEpisode
        )
        return true
    }

    private func sample(at now: Double, _ activity: ThreadActivity) {
        // A shim that exec'd its program keeps its name (pyenv's `pytest` bash script
        // becomes the `pytest` Python script): the executable says it. Checked before a
        // sample, so the sample is read with the new program's modules.
        if detector.phase == .batch, identity.executableChanged { identity.noteExec(at: now, in: self) }
        let observer = roles.observer
        switch roles.sampler.sample(
            at: now, activity: activity, cpuNanos: observer.readings.cpuNanos, cpuRead: observer.readings.schedstatRead, in: self,
            isBackInLoop: { observer.waitSites.isBackInLoop($0) })
        {
        case .awaitingKernelSample: break
        case .putOff: summary.samplesPutOff += 1
        case .taken(let withStop):
            summary.samples += 1
            if withStop { summary.capturesWithStop += 1 }
        }
        // A capture whose frames lay outside every known module re-read the maps, and
        // so may have been the first to see an exec (a child caught between its fork and
        // its exec): the reports must take the new name now, not never.
        identity.actOnChanges(at: now, in: self)
    }

    /// The main thread is gone: its open stall ends with it.
    private func end(gone now: Double) {
        flow.feed(in: self) { $0.finish(at: now, targetGone: true) }
        summary.targetExited = true
        // A zombie main thread whose process runs on in other threads: said as such, not
        // as the process's exit (issue 27).
        let others = target.liveThreadCount()
        if others > 0 {
            summary.mainThreadExitedLeaving = others
            log(
                "stallagent: \(identity.target.name.terminalSafe) [\(identity.target.pid)]'s "
                    + "\(StallAgentError.mainThreadExitedPhrase(threads: others)): there is no main thread to watch any more")
        }
        finished = true
    }

    /// See `LoopTurnTracker.counterWanted`.
    private func counterWanted(at now: Double) -> Bool {
        let phase = detector.episodePhase ?? detector.phase
        return turnTracker.counterWanted(
            at: now, phase: phase, threshold: detector.configuration.threshold(for: phase), episodeAge: detector.episodeAge)
    }

    /// Loop health for `stallagent view`, appended to the report directory every
    /// `LoopHealthRecorder.interval` of watching and at the end.
    func recordLoopHealth(at now: Double) {
        accountIdleTime(until: now)
        guard let line = loopHealth.close(at: now, turns: loopTurnCount, isLoop: { kind == .loop }) else { return }
        appendLoopHealth(
            LoopHealthSample(
                time: Date(), seconds: line.seconds, pid: identity.process.pid, name: identity.process.name, hostname: flow.stamp.hostname,
                unit: options.unit, turns: line.turns, busySeconds: line.busySeconds,
                longestTurnSeconds: line.longestTurnSeconds, evidence: turnTracker.evidence.rawValue))
    }

    /// Episode edges and loop turns from the loop probe (see `LoopProbeInterpreter`).
    private func applyLoopProbe(_ state: LoopProbeReader.State, to observation: ThreadObservation) -> ThreadObservation {
        loopProbeEdges.apply(
            state, to: observation, isInEpisode: { detector.isInEpisode }, addTurns: { turnTracker.addProbeTurns($0) },
            feed: { observation in flow.feed(in: self) { $0.observe(observation) } })
    }

    /// Ends the watch with the target still alive: an open stall is finalised.
    func stop(at now: Double) {
        guard !finished else { return }
        recordLoopHealth(at: now)
        flow.feed(in: self) { $0.finish(at: now, targetGone: false) }
        finished = true
    }

    /// Time asleep in the wait counts as idle up to `now`.
    func accountIdleTime(until now: Double) {
        guard !finished else { return }
        loopHealth.accountIdleTime(until: now)
    }

    /// See `StallMonitor.armWakeUp`.
    func armWakeUp() -> Int32? {
        // A thread its stamps show turning briskly is glanced at, not slept on (see
        // `StampedTurns.briskStampsPerSecond`); the stamps date its exits.
        let calm = !finished && !detector.isInEpisode && !stamps.turnsBriskly
        let fd = roles.wakeUp.arm(
            eligible: calm && identity.checks.checked, recordOnly: calm,
            counterUnchanged: { turnTracker.counterUnchanged() }, syscall: { target.syscall() })
        if fd != nil {
            turnTracker.rest(at: loopProbeEdges.lastFedTime)
            // Not read while asleep: one descriptor per sleeping process, the wake-up.
            target.releaseProbeFiles()
        }
        return fd
    }

    func disarmWakeUp() {
        roles.wakeUp.disarm()
    }
}

/// An exec or a rename, as the watch takes it (see `IdentityActing`), and what the report flow
/// reads of the target and tells the watch (see `StallReportFlow`).
extension ThreadWatch: StallReportFlow.Watch {
    func statIdentity() -> (name: String, startStack: UInt64?)? {
        target.statIdentity()
    }

    func execBegan(at now: Double) {
        flow.feed(in: self) { $0.noteExec(at: now) }
    }

    func processRenamed(_ name: String) {
        summary.name = name
    }

    func binaryImages() -> [ReportBinaryImage] {
        target.binaryImages()
    }

    func resolveFrame(_ frame: SampledFrame, index: Int) -> SymbolizedFrame {
        target.resolveFrame(frame, index: index)
    }

    func lockOwner() -> ReportLockOwner? {
        target.lockOwner()
    }

    var loopTurnsNote: String? { turnTracker.note }

    var samplingNote: String? { sampleSymbolizer.samplingNote }

    func turnEnded(_ duration: Double) {
        loopHealth.noteTurn(duration)
    }

    func stallRecorded(_ stall: MonitorSummary.Stall) {
        summary.record(stall)
    }

    func execdGoProgram() {
        summary.execdGoProgram = true
        finished = true
    }

    func forgetOldProgram() {
        roles.workers.forget()
        sampleSymbolizer.reset()
        roles.observer.forgetOldProgram()
        stamps.forgetSites()
        flow.update { $0.setLoopFrames([]) }
        roles.sampler.hints.io.clear()
    }
}
