import Foundation

import StallDetection
import StallProc
import StallCapture
import StallReports
import CPosix
#if canImport(Glibc)
import Glibc
#endif

/// Watches one process's main thread until it exits, the watch's duration ends, or a stop
/// is requested: probes /proc every few milliseconds, samples the stack only while the thread
/// is busy, feeds the pure `StallDetector`, and turns its events into reports on disk and one
/// line per stall on stderr. Everything runs on the calling thread (ptrace ownership).
public final class StallMonitor {
    public let options: MonitorOptions
    /// Names samples' frames, and a report's again when it is written.
    let sampleSymbolizer: SampleSymbolizer
    public let inspector: ProcessInspector
    public let writer: ReportWriter
    /// The detector and its events turned into reports (see the type).
    private let flow: StallReportFlow
    private var detector: StallDetector { flow.detector }
    /// Per-fingerprint occurrence counts (see `StallAnnouncer.fingerprints`).
    public package(set) var fingerprints: StallFingerprintBook {
        get { flow.announcer.fingerprints }
        set { flow.announcer.fingerprints = newValue }
    }
    /// When set, stall lines go here as structured events (see `StallAnnouncer.events`).
    public var stallEvents: ((StallMonitorEvent) -> Void)? {
        get { flow.announcer.events }
        set { flow.announcer.events = newValue }
    }
    /// Seconds the main thread spent in each state, from the probes.
    public var stateSeconds: [ThreadActivity: Double] { loopHealth.stateSeconds }
    /// Total time the target was stopped by captures, and captures made without a stop.
    public var pauseSecondsTotal: Double { flow.statistics.pauseSecondsTotal }
    public var capturesWithoutStop: Int { flow.statistics.capturesWithoutStop }
    /// Time per state, turn lengths and loop health lines (see the type).
    private var loopHealth = LoopHealthRecorder()
    let probe: ThreadProbeFiles
    private let log: (String) -> Void
    /// Who the process is, and what the watch does when it exec'd or was renamed (see the type).
    private let identity: IdentityActing
    /// libstallprobe.so in the target, when it was started with it preloaded.
    public var loopProbe: LoopProbeReader? { loopProbeEdges.reader }
    /// Episode edges and loop turns from the loop probe (see the type).
    private let loopProbeEdges: LoopProbeInterpreter
    /// One probe of the main thread, made into the detector's observation (see the type).
    private let observer: MainThreadObserver
    /// In a batch process, the thread the main thread waits for, watched in its stead.
    private let workers: WorkerDelegation
    /// Sleeps the agent on a thread settled in its wait (see the type).
    private let wakeUp: WakeUpArming

    private let turnTracker: LoopTurnTracker
    /// The evidence loop turns are counted by (see `LoopTurnTracker`), and why it is not a better one.
    public var loopTurnEvidence: LoopTurnEvidence { turnTracker.evidence }
    public var loopTurnsNote: String? { turnTracker.note }
    /// Busy turns' lengths (each busy episode ends with a turn or idle).
    public var turnLengths: TurnLengthHistogram { loopHealth.turnLengths }

    /// The busy turns that ended since the last call, for a metrics histogram.
    public func drainTurnLengths() -> [Double] {
        loopHealth.drainTurnLengths()
    }
    /// Loop turns seen so far (see `LoopTurnTracker.turns`), for metrics.
    public var loopTurnCount: UInt64 { turnTracker.count(stackRuleTurns: detector.stackRuleTurns) }
    /// Takes the stacks the detector asks for, and keeps what they say as hints (see the type).
    private let sampler: StackSampler

    public private(set) var summary: MonitorSummary

    /// `joinedAfterStart`: a wrapped command's descendant found after its start-up (see
    /// `DetectorConfiguration.batchJoinedAfterStart`).
    public init(
        pid: Int32, options: MonitorOptions, fingerprints: StallFingerprintBook = StallFingerprintBook(),
        joinedAfterStart: Bool = false, log: @escaping (String) -> Void
    ) throws {
        let parts = try MonitorParts(
            pid: pid, options: options, fingerprints: fingerprints, joinedAfterStart: joinedAfterStart, log: log)
        self.options = options
        self.log = log
        sampleSymbolizer = parts.sampleSymbolizer
        inspector = parts.inspector
        writer = parts.writer
        probe = parts.probe
        wakeUp = parts.wakeUp
        workers = parts.workers
        turnTracker = parts.turnTracker
        loopProbeEdges = parts.loopProbeEdges
        watchStart = parts.watchStart
        identity = parts.identity
        flow = parts.flow
        sampler = parts.sampler
        observer = parts.observer
        summary = MonitorSummary(
            pid: inspector.pid, name: inspector.name, watchedSeconds: 0,
            reportDirectory: URL(fileURLWithPath: options.reportDirectory).standardizedFileURL.path)
    }

    /// See `LoopTurnTracker.counterWanted`.
    private func counterWanted(at now: Double) -> Bool {
        let phase = detector.episodePhase ?? detector.phase
        return turnTracker.counterWanted(
            at: now, phase: phase, threshold: detector.configuration.threshold(for: phase), episodeAge: detector.episodeAge)
    }

    /// Seconds since the process started, from its start time in clock ticks since boot.
    public static func processAge(pid: Int32) -> Double? {
        guard let statText = try? ProcFS.readText("/proc/\(pid)/stat", pid: pid),
            let stat = ProcThreadStat.parse(statText),
            let uptimeText = try? ProcFS.readText("/proc/uptime"),
            let uptime = Double(uptimeText.split(separator: " ").first ?? "")
        else { return nil }
        return uptime - Double(stat.startTicks) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// When the watch began, and a compiled descendant's birth (see the type).
    private var watchStart: WatchStart
    /// When the identity is looked at again (see `IdentityCheckSchedule`).
    private var identityChecks: IdentityCheckSchedule { identity.checks }
    /// True once the target exited or `stop` was called.
    public private(set) var finished = false

    /// Runs until the target exits, `options.duration` passes, or `StopRequest` is set, on the
    /// engine every other loop uses: asleep while the thread sleeps in its wait.
    public func run() -> MonitorSummary {
        let start = MonotonicTime.seconds()
        begin(at: start)
        let engine = WatchEngine<StallMonitor>(probeInterval: options.probeInterval, start: start, seed: UInt64(inspector.pid))
        engine.add(self)
        defer { engine.remove(self) }
        while true {
            let now = MonotonicTime.seconds()
            let stopped = StopRequest.isRequested
            if stopped || options.duration.map({ now - start >= $0 }) == true {
                if stopped { summary.stoppedBySignal = StopRequest.signal }
                engine.wakeAll([self])
                accountIdleTime(until: now)
                stop(at: now)
                break
            }
            if !engine.step([self], at: now).gone.isEmpty { break }
            // Asleep, nothing is due before the end but the sleepers' tending.
            let end = options.duration.map { start + $0 } ?? .infinity
            engine.endRound(at: now, idleDeadline: min(end, now + 0.25))
        }
        return end()
    }

    /// The file stem of the report of the stall in progress, which retention must not delete.
    public var openReportStem: String? { flow.openReportStem }

    /// For drivers that step several monitors (the command wrapper).
    public func begin(at now: Double) {
        watchStart.begin(at: now)
        turnTracker.begin(at: now)
        identity.begin(at: now)
    }

    /// One probe and, when due, one sample. Returns false once the target is gone.
    @discardableResult
    public func step(at now: Double) -> Bool {
        guard !finished else { return false }
        wakeUp.beginStep()
        let leftWait = wakeUp.takeLeftWait()
        let turned = turnTracker.readCounter()
        let wasNested = observer.readings.inNestedWait
        let (cpuBefore, runQueueBefore) = (observer.observedCPUNanos, observer.observedRunQueueNanos)
        var observation = observer.observe(at: now, turned: turned, in: self)
        if let state = loopProbeEdges.read() {
            observation = applyLoopProbe(state, to: observation)
        }
        // A compiled descendant busy at the first probe was so since it started: nothing ran
        // on its thread before (CPU and run-queue time 0 at birth).
        if let born = watchStart.takeBirth(), loopHealth.lastObservation == nil, observation.activity.isBusy, born < observation.time {
            flow.feed(in: self) { $0.observe(ThreadObservation(time: born, activity: observation.activity, cpuNanos: 0, runQueueNanos: 0)) }
            loopHealth.observe(at: born, observation.activity)
        }
        // Woken from its wait and busy now: the work began when the kernel saw it leave the
        // wait, not at this probe, which a loaded agent makes late (a 2 s pg_sleep in a backend
        // of PostgreSQL under pgbench was reported as 1.86 s).
        if let left = leftWait, observation.activity.isBusy, !detector.isInEpisode,
            let last = loopHealth.lastObservation, last.activity == .idle, left > last.time, left < observation.time
        {
            flow.feed(in: self) {
                $0.observe(
                    ThreadObservation(time: left, activity: observation.activity, cpuNanos: cpuBefore, runQueueNanos: runQueueBefore))
            }
            // Idle until it left: `last` was idle.
            loopHealth.observe(at: left, observation.activity)
        }
        // Entries into a nested wait (pg_sleep's WaitLatch) move the counter too: they are not
        // turns of the loop.
        flow.feed(in: self) { $0.observe(observation, loopTurned: turned && !wasNested && !observer.readings.inNestedWait) }
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
        // On for a whole busy episode (a thread that blocks now and then would otherwise turn
        // it off and on every probe); batch processes are sampled by ptrace, as few as they are.
        inspector.setPerfSampling(tid: inspector.pid, busy: detector.isInEpisode && detector.phase != .batch)
        loopProbeEdges.fed(at: observation.time)
        loopHealth.observe(at: observation.time, observation.activity)
        if observation.activity == .gone {
            flow.feed(in: self) { $0.finish(at: now, targetGone: true) }
            summary.targetExited = true
            // A zombie main thread whose process runs on in other threads: said as such, not
            // as the process's exit (issue 27).
            let others = ProcessInspector.liveThreads(of: inspector.pid).count
            if others > 0 {
                summary.mainThreadExitedLeaving = others
                log(
                    "stallagent: \(inspector.name.terminalSafe) [\(inspector.pid)]'s "
                        + "\(StallAgentError.mainThreadExitedPhrase(threads: others)): there is no main thread to watch any more")
            }
            finished = true
            return false
        }
        if detector.wantsSample(at: now) {
            // A shim that exec'd its program keeps its name (pyenv's `pytest` bash script
            // becomes the `pytest` Python script): the executable says it. Checked before a
            // sample, so the sample is read with the new program's modules.
            if detector.phase == .batch, identity.executableChanged { identity.noteExec(at: now, in: self) }
            switch sampler.sample(
                at: now, activity: observation.activity, cpuNanos: observer.readings.cpuNanos, in: self,
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
        if detector.isStalled { flow.checkKillAfter(at: now) }
        if identity.checkIfDue(at: now, in: self) {
            for notice in InflationBudget.shared.drainNotices() { log("stallagent: " + notice) }
        }
        identity.settleIfDue(at: now, in: self)
        if loopHealth.isDue(at: now) { recordLoopHealth(at: now) }
        if flow.publisher.hasUnwrittenFinals { flow.publisher.retryFinalReports(at: now, final: false) }
        return true
    }

    /// Loop health for `stallagent view`, appended to the report directory every
    /// `LoopHealthRecorder.interval` of watching and at the end.
    private func recordLoopHealth(at now: Double) {
        accountIdleTime(until: now)
        guard let line = loopHealth.close(at: now, turns: loopTurnCount, isLoop: { kind == .loop }) else { return }
        writer.appendLoopHealth(
            LoopHealthSample(
                time: Date(), seconds: line.seconds, pid: identity.process.pid, name: identity.process.name, hostname: flow.stamp.hostname,
                unit: options.unit, turns: line.turns, busySeconds: line.busySeconds,
                longestTurnSeconds: line.longestTurnSeconds, evidence: loopTurnEvidence.rawValue))
    }

    /// Episode edges and loop turns from the loop probe (see `LoopProbeInterpreter`).
    private func applyLoopProbe(_ state: LoopProbeReader.State, to observation: ThreadObservation) -> ThreadObservation {
        loopProbeEdges.apply(
            state, to: observation, isInEpisode: { detector.isInEpisode }, addTurns: { turnTracker.addProbeTurns($0) },
            feed: { observation in flow.feed(in: self) { $0.observe(observation) } })
    }

    /// Ends the watch with the target still alive: an open stall is finalised.
    public func stop(at now: Double) {
        guard !finished else { return }
        recordLoopHealth(at: now)
        flow.feed(in: self) { $0.finish(at: now, targetGone: false) }
        finished = true
    }

    /// Detaches anything pending and fills in the summary's totals.
    public func end() -> MonitorSummary {
        // The last stretch of loop health, up to the exit (`stop` wrote it for a watch that ended).
        if let last = loopHealth.lastLineTime, MonotonicTime.seconds() - last >= 1 { recordLoopHealth(at: MonotonicTime.seconds()) }
        inspector.capturer.reapPending(final: true)
        flow.publisher.retryFinalReports(at: MonotonicTime.seconds(), final: true)
        // Final reports still waiting on debuginfod downloads: a short wait, not the whole
        // deadline, so a hung server cannot hold up a wrapped command's exit for long.
        DebuginfodFollowUp.drain(timeout: min(Debuginfod.shared.maxSeconds, 10))
        summary.watchedSeconds = MonotonicTime.seconds() - watchStart.time
        summary.loopTurnEvidence = loopTurnEvidence
        summary.loopTurns = loopTurnCount
        summary.longestTurn = turnLengths.longest
        summary.busySeconds = loopHealth.busySeconds
        summary.kind = kind
        (summary.agentCPUSeconds, summary.peakResidentBytes) = AgentResourceUsage.cpuAndPeak()
        summary.agentElapsedSeconds = StallMonitor.processAge(pid: getpid()) ?? summary.watchedSeconds
        return summary
    }

    /// What the process has shown itself to be so far (see `ProcessKind`).
    public var kind: ProcessKind {
        observer.waitSites.kind(countedTurns: turnTracker.evidence != .stackRule && turnTracker.turns > 0, batch: options.batchThreshold != nil)
    }

    /// An on-demand capture (0xbaaaaaad): where the main thread is right now, busy or not —
    /// the evidence a timeout leaves behind. Says where the text report went and what the
    /// thread was doing.
    public func writeSnapshotReport(at now: Double) -> TimeoutSnapshot {
        let (_, _, classification) = inspector.classify(tid: inspector.pid)
        var sample: StackSample?
        if let frames = inspector.namedStack(of: inspector.pid, activity: classification.activity) {
            sampleSymbolizer.remember(frames)
            sample = StackSample(
                time: now, activity: classification.activity,
                frames: frames.map(sampleSymbolizer.sampled))
        }
        let (snapshot, report, path) = flow.writeSnapshotReport(at: now, idleSample: sample, in: self)
        return TimeoutSnapshot(
            pid: inspector.pid, name: inspector.name, reportPath: path, topFunction: StallLedger.culprit(snapshot, report),
            activity: classification.detail.isEmpty ? classification.activity.rawValue : classification.detail)
    }

    /// Arms a wake-up for the moment the thread leaves its wait and returns the descriptor to
    /// poll; nil means keep probing (see `WakeUpArming.arm`).
    public func armWakeUp() -> Int32? {
        let fd = wakeUp.arm(
            eligible: !finished && !detector.isInEpisode && identityChecks.checked,
            counterUnchanged: { turnTracker.counterUnchanged() }, syscall: { probe.syscall() })
        if fd != nil {
            turnTracker.rest(at: loopProbeEdges.lastFedTime)
            // Not read while asleep: one descriptor per sleeping process, the wake-up.
            probe.release()
        }
        return fd
    }

    /// Asleep on its wake-up: the turn counters rest once the thread has been calm a while
    /// (`LoopTurnTracker.rest`).
    public func tendAsleep(at now: Double) {
        turnTracker.rest(at: now)
    }

    /// Time asleep in the wait counts as idle up to `now`, so metrics and the summary need no
    /// probe of a thread the scheduler leaves asleep.
    public func accountIdleTime(until now: Double) {
        guard !finished else { return }
        loopHealth.accountIdleTime(until: now)
    }

    /// Disarms what `armWakeUp` armed; the next step probes as usual.
    public func disarmWakeUp() {
        wakeUp.disarm()
    }
}

/// An exec or a rename, as the watch takes it (see `IdentityActing`), and what the report flow
/// reads of the target and tells the watch (see `StallReportFlow`).
extension StallMonitor: StallReportFlow.Watch {
    func statIdentity() -> (name: String, startStack: UInt64?)? {
        probe.stat().map { ($0.name, $0.startStack) }
    }

    func execBegan(at now: Double) {
        flow.feed(in: self) { $0.noteExec(at: now) }
    }

    func processRenamed(_ name: String) {
        summary.name = name
    }

    func binaryImages() -> [ReportBinaryImage] {
        inspector.modules.modules.map {
            ReportBinaryImage(
                start: $0.start, end: $0.end, name: $0.name, path: $0.path, buildId: $0.image?.buildID,
                unavailable: $0.unavailable?.rawValue)
        }
    }

    func resolveFrame(_ frame: SampledFrame, index: Int) -> SymbolizedFrame {
        sampleSymbolizer.resolve(frame, index: index, in: inspector)
    }

    func lockOwner() -> ReportLockOwner? {
        LockOwnerLookup.owner(from: inspector.pid, in: inspector)
    }

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
        workers.forget()
        sampleSymbolizer.reset()
        observer.forgetOldProgram()
        flow.update { $0.setLoopFrames([]) }
        sampler.hints.io.clear()
    }
}

/// The engine's scheduler sleeps a monitor on its `LoopWaker`.
extension StallMonitor: SteppableWatch {
    public var wakeLabel: String { "\(inspector.name)[\(inspector.pid)]" }
}
