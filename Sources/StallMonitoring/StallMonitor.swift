import Foundation

import StallDetection
import StallProc
import StallReports
import CPosix
import StallCapture
import StallSymbols
#if canImport(Glibc)
import Glibc
#endif

/// Watches one process's main thread until it exits, the watch's duration ends, or a stop
/// is requested: probes /proc every few milliseconds, samples the stack only while the thread
/// is busy, feeds the pure `StallDetector`, and turns its events into reports on disk and one
/// line per stall on stderr. Everything runs on the calling thread (ptrace ownership).
public final class StallMonitor {
    public let options: MonitorOptions
    public let inspector: ProcessInspector
    public let writer: ReportWriter
    /// The watched thread, stepped (see the type): everything but the attach and the public face.
    let watch: ThreadWatch
    private var flow: StallReportFlow { watch.flow }
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
    public var stateSeconds: [ThreadActivity: Double] { watch.loopHealth.stateSeconds }
    /// Total time the target was stopped by captures, and captures made without a stop.
    public var pauseSecondsTotal: Double { flow.statistics.pauseSecondsTotal }
    public var capturesWithoutStop: Int { flow.statistics.capturesWithoutStop }
    /// libstallprobe.so in the target, when it was started with it preloaded.
    public var loopProbe: LoopProbeReader? { watch.loopProbeEdges.reader }
    /// The evidence loop turns are counted by (see `LoopTurnTracker`), and why it is not a better one.
    public var loopTurnEvidence: LoopTurnEvidence { watch.turnTracker.evidence }
    public var loopTurnsNote: String? { watch.turnTracker.note }
    /// Busy turns' lengths (each busy episode ends with a turn or idle).
    public var turnLengths: TurnLengthHistogram { watch.loopHealth.turnLengths }

    /// The busy turns that ended since the last call, for a metrics histogram.
    public func drainTurnLengths() -> [Double] {
        watch.loopHealth.drainTurnLengths()
    }
    /// Loop turns seen so far (see `LoopTurnTracker.turns`), for metrics.
    public var loopTurnCount: UInt64 { watch.loopTurnCount }

    public var summary: MonitorSummary { watch.summary }

    /// `joinedAfterStart`: a wrapped command's descendant found after its start-up (see
    /// `DetectorConfiguration.batchJoinedAfterStart`).
    public init(
        pid: Int32, options: MonitorOptions, fingerprints: StallFingerprintBook = StallFingerprintBook(),
        joinedAfterStart: Bool = false, log: @escaping (String) -> Void
    ) throws {
        let parts = try MonitorParts(
            pid: pid, options: options, fingerprints: fingerprints, joinedAfterStart: joinedAfterStart, log: log)
        self.options = options
        inspector = parts.inspector
        let writer = parts.writer
        self.writer = writer
        watch = ThreadWatch(
            target: parts.target, roles: parts.roles, options: options,
            summary: MonitorSummary(
                pid: inspector.pid, name: inspector.name, watchedSeconds: 0,
                reportDirectory: URL(fileURLWithPath: options.reportDirectory).standardizedFileURL.path),
            appendLoopHealth: { writer.appendLoopHealth($0) }, log: log)
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

    /// True once the target exited or `stop` was called.
    public var finished: Bool { watch.finished }

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
                if stopped { watch.summary.stoppedBySignal = StopRequest.signal }
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
        watch.begin(at: now)
    }

    /// One probe and, when due, one sample. Returns false once the target is gone.
    @discardableResult
    public func step(at now: Double) -> Bool {
        watch.step(at: now)
    }

    /// False when this round may leave the probe out (see `ThreadWatch.needsStep`).
    public func needsStep(at now: Double) -> Bool {
        watch.needsStep(at: now)
    }

    /// Ends the watch with the target still alive: an open stall is finalised.
    public func stop(at now: Double) {
        watch.stop(at: now)
    }

    /// Detaches anything pending and fills in the summary's totals.
    public func end() -> MonitorSummary {
        // The last stretch of loop health, up to the exit (`stop` wrote it for a watch that ended).
        if let last = watch.loopHealth.lastLineTime, MonotonicTime.seconds() - last >= 1 {
            watch.recordLoopHealth(at: MonotonicTime.seconds())
        }
        inspector.capturer.reapPending(final: true)
        flow.publisher.retryFinalReports(at: MonotonicTime.seconds(), final: true)
        // Final reports still waiting on debuginfod downloads: a short wait, not the whole
        // deadline, so a hung server cannot hold up a wrapped command's exit for long.
        DebuginfodFollowUp.drain(timeout: min(Debuginfod.shared.maxSeconds, 10))
        var summary = watch.summary
        summary.watchedSeconds = MonotonicTime.seconds() - watch.watchStartTime
        summary.loopTurnEvidence = loopTurnEvidence
        summary.loopTurns = loopTurnCount
        summary.longestTurn = turnLengths.longest
        summary.busySeconds = watch.loopHealth.busySeconds
        summary.kind = kind
        (summary.agentCPUSeconds, summary.peakResidentBytes) = AgentResourceUsage.cpuAndPeak()
        summary.agentElapsedSeconds = StallMonitor.processAge(pid: getpid()) ?? summary.watchedSeconds
        watch.summary = summary
        return summary
    }

    /// What the process has shown itself to be so far (see `ProcessKind`).
    public var kind: ProcessKind { watch.kind }

    /// An on-demand capture (0xbaaaaaad): where the main thread is right now, busy or not —
    /// the evidence a timeout leaves behind. Says where the text report went and what the
    /// thread was doing.
    public func writeSnapshotReport(at now: Double) -> TimeoutSnapshot {
        let (_, _, classification) = inspector.classify(tid: inspector.pid)
        var sample: StackSample?
        if let frames = inspector.namedStack(of: inspector.pid, activity: classification.activity) {
            let symbolizer = watch.sampleSymbolizer
            symbolizer.remember(frames)
            sample = StackSample(time: now, activity: classification.activity, frames: frames.map(symbolizer.sampled))
        }
        let (snapshot, report, path) = flow.writeSnapshotReport(at: now, idleSample: sample, in: watch)
        return TimeoutSnapshot(
            pid: inspector.pid, name: inspector.name, reportPath: path, topFunction: StallLedger.culprit(snapshot, report),
            activity: classification.detail.isEmpty ? classification.activity.rawValue : classification.detail)
    }

    /// Arms a wake-up for the moment the thread leaves its wait and returns the descriptor to
    /// poll; nil means keep probing (see `WakeUpArming.arm`).
    public func armWakeUp() -> Int32? {
        watch.armWakeUp()
    }

    /// Asleep on its wake-up: the turn counters rest once the thread has been calm a while
    /// (`LoopTurnTracker.rest`).
    public func tendAsleep(at now: Double) {
        watch.turnTracker.rest(at: now)
    }

    /// Time asleep in the wait counts as idle up to `now`, so metrics and the summary need no
    /// probe of a thread the scheduler leaves asleep.
    public func accountIdleTime(until now: Double) {
        watch.accountIdleTime(until: now)
    }

    /// Disarms what `armWakeUp` armed; the next step probes as usual.
    public func disarmWakeUp() {
        watch.disarmWakeUp()
    }
}

/// The engine's scheduler sleeps a monitor on its `LoopWaker`.
extension StallMonitor: SteppableWatch {
    public var wakeLabel: String { "\(inspector.name)[\(inspector.pid)]" }
}
