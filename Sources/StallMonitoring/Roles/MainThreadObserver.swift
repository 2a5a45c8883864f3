import StallDetection
import StallProc

/// One probe of the main thread, made into the observation the detector takes: read from its
/// /proc files (the syscall file alone for a loop at rest in its home wait), then corrected in
/// turn by its wait site (home or nested, a lock), parking, what the last sample said, the
/// user's frame patterns, a batch parent waiting for its child, and the worker it waits for.
/// How the process ended, when it did, goes to the detector too. Apart from the monitor, it is
/// tested with a fake target.
final class MainThreadObserver {
    /// What the observer reads of the target: its inspector and the main thread's probe files
    /// (`InspectedTarget`), or a fake in tests.
    protocol Target: WaitSiteClassifier.Target {
        var pid: Int32 { get }
        func syscall() -> ProcSyscallInfo?
        func stat() -> ProcThreadStat?
        func schedstat() -> ProcSchedstat?
        func fileKind(_ fd: Int) -> String?
        /// The signal that ended the process (0: its own exit) when the wrapper reaped it
        /// already; nil when it did not.
        func reapedSignal() -> Int32?
        /// The main thread's children (`/proc/PID/task/PID/children`), "" when unreadable.
        func children() -> String
    }

    /// The raw site (PC and SP of the system call) of the last home wait a probe found the
    /// thread in: what its wait stamps are added up against (`StampedTurns`).
    private(set) var lastHomeSite: HomeWaitTracker.Site?
    /// CPU time, call and nesting the latest probe read (see the type).
    private(set) var readings = ProbeReadings()
    /// Home and nested waits, parking, lock waits and the user's frames (see the type).
    private(set) var waitSites: WaitSiteClassifier
    /// The thread's activity from /proc, classified again only when it changed (see the type).
    private let activities: ActivityClassifier
    private let target: Target
    private let flow: StallReportFlow
    private let workers: WorkerDelegation
    private let wakeUp: WakeUpArming
    private let sampler: StackSampler
    private let identity: IdentityActing
    private let turnTracker: LoopTurnTracker
    /// `--child-waits-are-parking`.
    private let childWaitsAreParking: Bool
    /// `--busy-frame` patterns were given.
    private let hasBusyFrames: Bool

    init(
        target: Target, waitSites: WaitSiteClassifier, activities: ActivityClassifier, flow: StallReportFlow,
        workers: WorkerDelegation, wakeUp: WakeUpArming, sampler: StackSampler, identity: IdentityActing,
        turnTracker: LoopTurnTracker, childWaitsAreParking: Bool, hasBusyFrames: Bool
    ) {
        self.target = target
        self.waitSites = waitSites
        self.activities = activities
        self.flow = flow
        self.workers = workers
        self.wakeUp = wakeUp
        self.sampler = sampler
        self.identity = identity
        self.turnTracker = turnTracker
        self.childWaitsAreParking = childWaitsAreParking
        self.hasBusyFrames = hasBusyFrames
    }

    private var detector: StallDetector { flow.detector }

    /// The main thread's CPU and run-queue time, plus the followed workers' (see
    /// `WorkerThreadFollower`): one count that only grows.
    var observedCPUNanos: UInt64 { readings.cpuNanos &+ workers.cpuNanos }
    var observedRunQueueNanos: UInt64 { readings.runQueueNanos &+ workers.runQueueNanos }

    /// The probe at `now`; `turned`: the loop's turn counter moved since the last probe.
    func observe(at now: Double, turned: Bool, in watch: IdentityActing.Watch) -> ThreadObservation {
        let syscall = target.syscall()
        readings.syscallNumber = syscall?.syscallNumber
        let waitVerdict = syscall.flatMap { waitSiteVerdict($0, turned: turned) }
        readings.inNestedWait = waitVerdict == .nested
        // The common case, an idle event loop, is decided by the syscall file alone: stat and
        // schedstat add nothing (a stopped thread in epoll_wait is "no stall" either way), and
        // skipping them halves the cost of an idle watch.
        if waitVerdict == .home, !detector.isInEpisode, !waitSites.waitSiteIsNew {
            workers.watchMainThread()
            return ThreadObservation(time: now, activity: .idle, cpuNanos: observedCPUNanos, runQueueNanos: observedRunQueueNanos)
        }
        guard let stat = target.stat() else {
            // Reaped already: the wrapper (the command's parent, or the subreaper of orphans)
            // noted how it ended.
            if let signal = target.reapedSignal() {
                flow.update { if signal == 0 { $0.noteExit() } else { $0.noteKilled() } }
            }
            return ThreadObservation(time: now, activity: .gone)
        }
        // A zombie says how it ended until its parent reaps it: by its own exit, a stall keeps
        // its reason (issue 25: a test whose last act was a sleep did not die).
        if stat.state == "Z" || stat.state == "X", let code = stat.exitCode {
            flow.update { if code & 0x7f == 0 { $0.noteExit() } else { $0.noteKilled() } }
        }
        identity.noteStat(name: stat.name, startStack: stat.startStack, at: now, in: watch)
        let sched = target.schedstat()
        var activity = classify(state: stat.state, syscall: syscall)
        var parkedIn: ProcSyscallInfo?
        // Fed at every probe, so its first look is the agent's; learns only while no loop is known.
        let parkedNow =
            detector.phase != .batch
            && waitSites.parked(in: syscall, activity: activity, ran: readings.ran(sched))
        if activity == .idle, waitVerdict == .nested {
            activity = waitSites.lastSiteWaitsForLock ? .lockWait : .blockedCall
        } else if activity == .blockedCall, let number = syscall?.syscallNumber,
            ParkingClassifier.parkingSyscalls.contains(number)
                || (childWaitsAreParking && ParkingClassifier.childWaitSyscalls.contains(number)),
            !waitSites.knowsLoop
        {
            activity = .idle
            parkedIn = syscall
        } else if parkedNow {
            activity = .idle
            parkedIn = syscall
        } else if let hinted = sampler.hints.correction(of: activity, in: syscall) {
            activity = hinted
        }
        if activity == .idle, hasBusyFrames, let syscall,
            waitSites.isBusyByFrame(syscall: syscall, in: target)
        {
            activity = .blockedCall
        }
        if activity == .blockedCall, detector.phase == .batch, let number = syscall?.syscallNumber,
            ParkingClassifier.childWaitSyscalls.contains(number)
        {
            // A batch parent waiting for its child (a shell running a test binary, make's
            // recursion) is not stalled: the child is watched itself. The clock pauses as if
            // stopped, and nothing is sampled.
            activity = .stopped
        }
        if activity == .idle, let parkedIn {
            // Parked in the very same call at two probes in a row: settled (see `armWakeUp`).
            noteParked(in: parkedIn)
        }
        // Not before the runner's frames are learnt from the main thread's own first sample:
        // a test's frames taken for the runner's are never a stall.
        if let seen = workers.follow(
            at: now, batch: detector.phase == .batch, knowsRunnerFrames: detector.knowsRunnerFrames, syscall: syscall,
            activity: activity)
        {
            let target = self.target
            activity = activities.classifier.classify(state: seen.stat.state, syscall: seen.syscall, fileKind: { target.fileKind($0) }).activity
        }
        resetEpisodeStatisticsIfNeeded()
        readings.took(sched)
        return ThreadObservation(
            time: now, activity: activity, cpuNanos: observedCPUNanos, runQueueNanos: observedRunQueueNanos)
    }

    /// The raw site (PC and SP of a system call) is a known home wait's (see
    /// `WaitSiteClassifier.isKnownHome`).
    func isKnownHome(raw: HomeWaitTracker.Site) -> Bool {
        waitSites.isKnownHome(raw: raw)
    }

    /// The process exec'd: the old program's wait sites, loop frames and parking, and its last
    /// classified call, are forgotten.
    func forgetOldProgram() {
        lastHomeSite = nil
        waitSites.reset()
        activities.forget()
    }

    /// The thread's activity (see `ActivityClassifier`).
    private func classify(state: Character, syscall: ProcSyscallInfo?) -> ThreadActivity {
        let target = self.target
        return activities.classify(
            state: state, syscall: syscall, fileKind: { fd in target.fileKind(fd) },
            idleByFrame: { waitSites.isIdleByFrame(syscall: $0, in: target) })
    }

    private func resetEpisodeStatisticsIfNeeded() {
        // Read into plain locals first: comparing the detector's optional directly trips a
        // Swift 6.3 release-mode optimizer crash (CopyPropagation ownership verification).
        let startTime: Double? = detector.isInEpisode ? detector.episodeStartTime : nil
        flow.statistics.resetIfNewEpisode(startedAt: startTime)
    }

    /// Home or nested, for a thread in one of the idle-set waits (nil for anything else).
    private func waitSiteVerdict(_ syscall: ProcSyscallInfo, turned: Bool) -> HomeWaitTracker.Verdict? {
        let look = waitSites.look(at: syscall, turned: turned, evidence: turnTracker.evidence, in: target)
        if look.unchanged { wakeUp.noteUnchangedWait(syscall) }
        if look.learnedLoopFrames { flow.update { $0.setLoopFrames(waitSites.loopFrames) } }
        if look.verdict == .home, let pc = syscall.programCounter, let sp = syscall.stackPointer {
            lastHomeSite = HomeWaitTracker.Site(pc: pc, sp: sp)
        }
        return look.verdict
    }

    private func noteParked(in syscall: ProcSyscallInfo) {
        let target = self.target
        waitSites.noteParked(in: syscall) { target.children() }
        wakeUp.noteParked(in: syscall)
    }
}
