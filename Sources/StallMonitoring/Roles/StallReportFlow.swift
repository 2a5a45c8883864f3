import Foundation
import StallDetection
import StallProc
import StallReports
import StallCapture
import StallSymbols

/// The stall detector and what becomes of its events: each stall's report written when it is
/// detected, at every update and at its end, the lines said about it, the lock owner looked up
/// while it lasts, its book closed and, with `--kill-after`, the process ended. The detector is
/// changed only through `feed` and `update`, so no role that feeds it can drop an event; apart
/// from the monitor, the flow is tested with a fake watch and a fake writer.
final class StallReportFlow {
    /// What the flow reads of the target and tells the watch: the monitor, or a fake in tests.
    protocol Watch: IdentityActing.Watch {
        /// Every module mapped in the target, as reports list them.
        func binaryImages() -> [ReportBinaryImage]
        /// A sampled frame named in full for a report (see `SampleSymbolizer.resolve`).
        func resolveFrame(_ frame: SampledFrame, index: Int) -> SymbolizedFrame
        /// The owner of the lock the main thread waits on (see `LockOwnerLookup`); nil for none.
        func lockOwner() -> ReportLockOwner?
        /// Why loop turns are counted the way they are (see `LoopTurnTracker.note`).
        var loopTurnsNote: String? { get }
        /// What reports say when stacks cannot be sampled (see `SampleSymbolizer.samplingNote`).
        var samplingNote: String? { get }
        /// A busy episode ended after `duration` seconds: a turn of the loop.
        func turnEnded(_ duration: Double)
        /// A stall ended and its report was written: the summary counts it.
        func stallRecorded(_ stall: MonitorSummary.Stall)
    }

    private(set) var detector: StallDetector
    /// Whether a stall gets a report, and its lines (see the type).
    let announcer: StallAnnouncer
    /// Writes each revision of a stall's report and keeps the stall's book (`StallLedger`).
    let publisher: ReportPublisher
    /// With `--kill-after`.
    private let killPolicy: KillPolicy?
    /// The host's name and the wall clock's offset, for reports (see the type).
    let stamp: HostStamp
    /// What the captures cost the target, for the report's "Agent:" line (see the type).
    var statistics = CaptureStatistics()
    /// In a batch process, the thread the main thread waits for, which a stall may be about.
    private let workers: WorkerDelegation
    /// Who the process is, as reports name it.
    private let identity: IdentityActing
    private let probeInterval: Double

    init(
        detector: StallDetector, announcer: StallAnnouncer, publisher: ReportPublisher, killPolicy: KillPolicy?,
        workers: WorkerDelegation, identity: IdentityActing, probeInterval: Double, stamp: HostStamp = HostStamp()
    ) {
        self.detector = detector
        self.announcer = announcer
        self.publisher = publisher
        self.killPolicy = killPolicy
        self.workers = workers
        self.identity = identity
        self.probeInterval = probeInterval
        self.stamp = stamp
    }

    /// Gives the detector `change` and acts on the events it returns.
    func feed(in watch: Watch, _ change: (inout StallDetector) -> [DetectorEvent]) {
        handle(change(&detector), in: watch)
    }

    /// A change of the detector that returns no events (an exit noted, loop frames learnt).
    func update(_ change: (inout StallDetector) -> Void) {
        change(&detector)
    }

    private func handle(_ events: [DetectorEvent], in watch: Watch) {
        for event in events {
            switch event {
            case .stallStarted(let snapshot):
                workers.stallStarted(snapshot.id)
                let decision = announcer.decide(snapshot)
                publisher.ledger.open(snapshot.id, decision: decision)
                refreshLockOwner(for: snapshot, in: watch)
                let report = write(snapshot, in: watch)
                announcer.detected(
                    snapshot, report, decision: decision, reportPath: { publisher.ledger.reportPaths[snapshot.id]?.text },
                    name: identity.target.name, pid: identity.target.pid, thread: workers.stalledThread(snapshot.id))
            case .stallUpdated(let snapshot):
                refreshLockOwner(for: snapshot, in: watch)
                write(snapshot, in: watch)
            case .stallEnded(let snapshot):
                record(snapshot, write(snapshot, in: watch), in: watch)
                workers.stallEnded(snapshot.id)
            case .episodeEnded(let episode):
                workers.episodeEnded()
                watch.turnEnded(episode.duration)
            case .launchPhaseEnded:
                break
            }
        }
    }

    /// While the main thread waits on a lock, find the owner chain (and a deadlock) and the
    /// owner's stack. Kept per stall: when the stall ends the lock is no longer awaited.
    private func refreshLockOwner(for snapshot: StallSnapshot, in watch: Watch) {
        guard let owner = watch.lockOwner() else { return }
        publisher.ledger.setLockOwner(owner, for: snapshot.id)
        if owner.deadlock && !snapshot.deadlock {
            handle(detector.setDeadlock(true, at: MonotonicTime.seconds()), in: watch)
        }
    }

    private func context(for snapshot: StallSnapshot, in watch: Watch) -> StallReportContext {
        StallReportContext(
            process: identity.process, thread: workers.stallWorker(snapshot.id) ?? identity.thread, wallClockOffset: stamp.wallClockOffset,
            resolveFrame: { [unowned watch] frame, index in watch.resolveFrame(frame, index: index) },
            binaryImages: watch.binaryImages(), lockOwner: publisher.ledger.lockOwners[snapshot.id],
            agent: statistics.episodeStats(samples: snapshot.sampleCount, probeInterval: probeInterval),
            termination: publisher.ledger.terminations[snapshot.id], occurrence: publisher.ledger.occurrence(snapshot.id),
            hostname: stamp.hostname, loopTurnsNote: watch.loopTurnsNote, samplingNote: watch.samplingNote)
    }

    @discardableResult
    private func write(_ snapshot: StallSnapshot, in watch: Watch) -> StallReport {
        if identity.settleReadsLeft > 0 { identity.settle(in: watch) }
        let report = StallReport(snapshot: snapshot, context: context(for: snapshot, in: watch))
        publisher.publish(report, of: snapshot)
        return report
    }

    private func record(_ snapshot: StallSnapshot, _ report: StallReport, in watch: Watch) {
        let path = publisher.ledger.summaryPath(snapshot.id)
        announcer.logEnded(report, reportPath: path)
        let stall = publisher.ledger.stall(snapshot, report)
        watch.stallRecorded(stall)
        announcer.sendEnded(stall, report, reportPath: path)
        publisher.close(snapshot.id)
    }

    /// An on-demand capture's report, outside any stall (see `ReportPublisher.writeSnapshot`):
    /// the snapshot, its report and the text's path (nil when it could not be written).
    func writeSnapshotReport(at now: Double, idleSample: StackSample?, in watch: Watch) -> (
        snapshot: StallSnapshot, report: StallReport, path: String?
    ) {
        let snapshot = detector.captureSnapshot(at: now, idleSample: idleSample)
        let report = StallReport(snapshot: snapshot, context: context(for: snapshot, in: watch))
        return (snapshot, report, publisher.writeSnapshot(report))
    }

    /// The file stem of the report of the stall in progress, which retention must not delete.
    var openReportStem: String? {
        guard let id = detector.currentStallID, let paths = publisher.ledger.reportPaths[id] else { return nil }
        return ((paths.text as NSString).lastPathComponent as NSString).deletingPathExtension
    }

    // MARK: --kill-after

    func checkKillAfter(at now: Double) {
        guard let killPolicy, let id = detector.currentStallID, let age = detector.episodeAge,
            let termination = killPolicy.check(stallID: id, age: age, at: now)
        else { return }
        publisher.ledger.noteTermination(termination, for: id)
    }
}
