import Foundation

import StallCapture
import StallDetection
import StallProc
import StallReports

/// The roles one watch is made of, built and wired from its options in the order the attach
/// needs (the kill's pidfd before anything else, the process's age before its modules are
/// read); `StallMonitor` takes them and drives them.
struct MonitorParts {
    let sampleSymbolizer: SampleSymbolizer
    let inspector: ProcessInspector
    let writer: ReportWriter
    let probe: ThreadProbeFiles
    let wakeUp: WakeUpArming
    let workers: WorkerDelegation
    let turnTracker: LoopTurnTracker
    let loopProbeEdges: LoopProbeInterpreter
    let watchStart: WatchStart
    let identity: IdentityActing
    let flow: StallReportFlow
    let sampler: StackSampler
    let observer: MainThreadObserver

    /// See `StallMonitor.init`.
    init(
        pid: Int32, options: MonitorOptions, fingerprints: StallFingerprintBook, joinedAfterStart: Bool,
        log: @escaping (String) -> Void
    ) throws {
        sampleSymbolizer = SampleSymbolizer(appFrames: AppFrameRule(patterns: options.appFramePatterns))
        let pidfd = options.killAfter == nil ? nil : KillPolicy.Pidfd(pid: pid)
        let announcer = StallAnnouncer(
            fingerprints: fingerprints, quiet: options.quiet, minimumReportInterval: options.minimumReportInterval, log: log,
            wallClock: { Date().timeIntervalSince1970 })
        // Its age when the attach began, not after it: loading the modules' symbols can take
        // a second on a loaded machine, and a process attached to while young is launching.
        let age = StallMonitor.processAge(pid: pid)
        var captureOptions = ThreadCapturer.Options()
        captureOptions.maxStackBytes = options.maxStackBytes
        inspector = try ProcessInspector(
            pid: pid, capturer: ThreadCapturer(options: captureOptions), debugDirectories: options.debugDirectories,
            debuginfod: .background)
        if inspector.isGoProgram { throw StallAgentError.goProgram(pid: inspector.pid) }
        writer = try ReportWriter.shared(directory: options.reportDirectory)
        let debugDirectories = options.debugDirectories
        let publisher = ReportPublisher(
            sink: writer, pid: inspector.pid, writeFolded: options.writeFolded, log: log, clock: MonotonicTime.seconds,
            followUp: { report, jsonPath in
                DebuginfodFollowUp.symbolicateWhenFetched(report, jsonPath: jsonPath, debugDirectories: debugDirectories)
            })
        let classifier = ThreadStateClassifier(extraIdleSyscalls: options.extraIdleSyscalls)
        let waitSites = WaitSiteClassifier(
            idleSyscalls: classifier.idleSyscalls, busyFramePatterns: options.busyFramePatterns,
            idleFramePatterns: options.idleFramePatterns, firstWaitIsParking: options.firstWaitIsParking)
        inspector.classifier = classifier
        let targetPid = inspector.pid
        let activities = ActivityClassifier(
            classifier: classifier, hasIdleFrames: !options.idleFramePatterns.isEmpty, clock: MonotonicTime.seconds,
            readFrozen: { CgroupFreezer.isFrozen(pid: targetPid) })
        inspector.perfSampling = options.perfSampling
        inspector.perfSamplePeriod = options.sampleInterval / 2
        probe = try ThreadProbeFiles(pid: inspector.pid, tid: inspector.pid)
        let tid = inspector.pid
        wakeUp = WakeUpArming(openWaker: { try LoopWaker(tid: tid) })
        wakeUp.prepare()
        workers = WorkerDelegation(follower: WorkerThreadFollower(target: inspector))
        var killPolicy: KillPolicy?
        if let limit = options.killAfter, let pidfd {
            killPolicy = KillPolicy(limit: limit, grace: options.killGrace, pid: inspector.pid, pidfd: pidfd, log: log)
        }
        let loopProbe = LoopProbeReader(pid: inspector.pid, modules: inspector.modules)
        turnTracker = try LoopTurnTracker(
            tid: inspector.pid, mode: options.loopTurns, hasLoopProbe: loopProbe != nil, log: log)
        loopProbeEdges = LoopProbeInterpreter(reader: options.loopTurns == .stackRule ? nil : loopProbe)
        let configuration = Self.detectorConfiguration(
            options: options, age: age, evidence: turnTracker.evidence, joinedAfterStart: joinedAfterStart)
        let modules = inspector
        watchStart = WatchStart(
            age: age, joinedAfterStart: joinedAfterStart, batch: options.batchThreshold != nil,
            mainModule: { modules.mainModule?.name })
        identity = IdentityActing(of: inspector, redactArgv: options.redactArgv, unit: options.unit, quiet: options.quiet, log: log)
        flow = StallReportFlow(
            detector: StallDetector(configuration: configuration), announcer: announcer, publisher: publisher, killPolicy: killPolicy,
            workers: workers, identity: identity, probeInterval: options.probeInterval)
        let target = InspectedTarget(inspector: inspector, probe: probe, symbolizer: sampleSymbolizer)
        sampler = StackSampler(target: target, symbolizer: sampleSymbolizer, workers: workers, flow: flow, log: log)
        observer = MainThreadObserver(
            target: target, waitSites: waitSites, activities: activities, flow: flow, workers: workers, wakeUp: wakeUp, sampler: sampler,
            identity: identity, turnTracker: turnTracker, childWaitsAreParking: options.childWaitsAreParking,
            hasBusyFrames: !options.busyFramePatterns.isEmpty)
    }

    /// The detector's settings for a process `age` seconds old (nil: unknown) when the attach
    /// began.
    static func detectorConfiguration(
        options: MonitorOptions, age: Double?, evidence: LoopTurnEvidence, joinedAfterStart: Bool
    ) -> DetectorConfiguration {
        // A process attached to long after it started is past its launch: use the loop threshold.
        var configuration = DetectorConfiguration(
            threshold: options.threshold, launchThreshold: options.launchThreshold,
            sampleInterval: options.sampleInterval,
            startsInLaunchPhase: age.map { $0 < options.launchThreshold || options.batchThreshold != nil } ?? false,
            loopTurnEvidence: evidence, batchThreshold: options.batchThreshold)
        configuration.batchJoinedAfterStart = joinedAfterStart
        return configuration
    }
}
