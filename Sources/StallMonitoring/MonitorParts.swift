import Foundation
import StallCapture

import StallDetection
import StallProc
import StallReports

/// What a watch of a real process opens, in the order the attach needs (the kill's pidfd
/// before anything else, the process's age before its modules are read), and its roles wired
/// to it (`ThreadWatch.Roles`); `StallMonitor` takes them and drives them.
struct MonitorParts {
    let inspector: ProcessInspector
    let writer: ReportWriter
    /// The process as the roles read it: the inspector and the main thread's probe files.
    let target: InspectedTarget
    let roles: ThreadWatch.Roles

    /// See `StallMonitor.init`.
    init(
        pid: Int32, options: MonitorOptions, fingerprints: StallFingerprintBook, joinedAfterStart: Bool,
        log: @escaping (String) -> Void
    ) throws {
        let sampleSymbolizer = SampleSymbolizer(appFrames: AppFrameRule(patterns: options.appFramePatterns))
        let pidfd = options.killAfter == nil ? nil : KillPolicy.Pidfd(pid: pid)
        // Its age when the attach began, not after it: loading the modules' symbols can take
        // a second on a loaded machine, and a process attached to while young is launching.
        let age = StallMonitor.processAge(pid: pid)
        let programStart = age.map { MonotonicTime.seconds() - $0 }
        var captureOptions = ThreadCapturer.Options()
        captureOptions.maxStackBytes = options.maxStackBytes
        inspector = try ProcessInspector(
            pid: pid, capturer: ThreadCapturer(options: captureOptions), debugDirectories: options.debugDirectories,
            debuginfod: .background)
        if inspector.isGoProgram { throw StallAgentError.goProgram(pid: inspector.pid) }
        writer = try ReportWriter.shared(directory: options.reportDirectory)
        let debugDirectories = options.debugDirectories
        let classifier = ThreadStateClassifier(extraIdleSyscalls: options.extraIdleSyscalls)
        inspector.classifier = classifier
        inspector.perfSampling = options.perfSampling
        inspector.perfSamplePeriod = options.sampleInterval / 2
        let probe = try ThreadProbeFiles(pid: inspector.pid, tid: inspector.pid)
        let tid = inspector.pid
        let wakeUp = WakeUpArming(openWaker: { try LoopWaker(tid: tid) })
        wakeUp.prepare()
        var killPolicy: KillPolicy?
        if let limit = options.killAfter, let pidfd {
            killPolicy = KillPolicy(limit: limit, grace: options.killGrace, pid: inspector.pid, pidfd: pidfd, log: log)
        }
        let loopProbe = LoopProbeReader(pid: inspector.pid, modules: inspector.modules)
        let turnTracker = try LoopTurnTracker(
            tid: inspector.pid, mode: options.loopTurns, hasLoopProbe: loopProbe != nil, log: log, stamped: options.stampsWaits)
        target = InspectedTarget(inspector: inspector, probe: probe, symbolizer: sampleSymbolizer)
        let modules = inspector
        let resources = ThreadWatch.Roles.Resources(
            process: inspector, thread: target, symbolizer: sampleSymbolizer, classifier: classifier, sink: writer,
            followUp: { report, jsonPath in
                DebuginfodFollowUp.symbolicateWhenFetched(report, jsonPath: jsonPath, debugDirectories: debugDirectories)
            }, turnTracker: turnTracker, wakeUp: wakeUp, workers: WorkerDelegation(follower: WorkerThreadFollower(target: inspector)),
            killPolicy: killPolicy, loopProbe: loopProbe, age: age, programStart: programStart, mainModule: { modules.mainModule?.name },
            readFrozen: { CgroupFreezer.isFrozen(pid: tid) })
        roles = ThreadWatch.Roles(
            options: options, fingerprints: fingerprints, joinedAfterStart: joinedAfterStart, resources: resources, log: log)
    }
}
