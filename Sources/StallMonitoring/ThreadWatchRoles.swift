import Foundation
import StallCapture

import StallDetection
import StallProc
import StallReports

extension ThreadWatch {
    /// The roles a watch is made of (see each type), wired to one another from the watch's
    /// options. The same wiring serves a real process (`MonitorParts` gives it the inspector,
    /// the probe files, the report directory and the kernel's counters) and a scripted fake in
    /// the unit tests, so what the tests drive is what runs.
    struct Roles {
        let sampleSymbolizer: SampleSymbolizer
        let wakeUp: WakeUpArming
        let workers: WorkerDelegation
        let turnTracker: LoopTurnTracker
        let loopProbeEdges: LoopProbeInterpreter
        var watchStart: WatchStart
        let identity: IdentityActing
        let flow: StallReportFlow
        let sampler: StackSampler
        let observer: MainThreadObserver

        /// What the roles are wired to: the process, as each reads it, and what opened on it.
        struct Resources {
            /// Who the process is (its `ProcessInspector`, or a scripted process).
            let process: IdentityActing.Target
            /// Its main thread, as the observer and the sampler read it.
            let thread: MainThreadObserver.Target & StackSampler.Target
            /// The symbolizer `thread` names frames with.
            let symbolizer: SampleSymbolizer
            let classifier: ThreadStateClassifier
            let sink: ReportPublisher.Sink
            /// A final report written while debug files are still downloading is rewritten.
            var followUp: (StallReport, String) -> Void = { _, _ in }
            let turnTracker: LoopTurnTracker
            let wakeUp: WakeUpArming
            let workers: WorkerDelegation
            var killPolicy: KillPolicy?
            var loopProbe: LoopProbeReader?
            /// The process's age when the attach began (nil: unknown).
            let age: Double?
            /// When the process was born, on `clock` (nil: unknown): a batch watch's first sample
            /// taken long after it came late (see `DetectorConfiguration.batchLateFirstSample`).
            var programStart: Double? = nil
            /// The name of the program's main module (see `WatchStart`).
            let mainModule: () -> String?
            /// Whether the process's cgroup is frozen (see `ActivityClassifier`).
            var readFrozen: () -> Bool = { false }
            /// The monotonic clock, in seconds.
            var clock: () -> Double = MonotonicTime.seconds
            var stamp = HostStamp()
        }

        init(
            options: MonitorOptions, fingerprints: StallFingerprintBook, joinedAfterStart: Bool, resources: Resources,
            log: @escaping (String) -> Void
        ) {
            let (process, thread) = (resources.process, resources.thread)
            sampleSymbolizer = resources.symbolizer
            wakeUp = resources.wakeUp
            workers = resources.workers
            turnTracker = resources.turnTracker
            let announcer = StallAnnouncer(
                fingerprints: fingerprints, quiet: options.quiet, minimumReportInterval: options.minimumReportInterval, log: log,
                wallClock: { Date().timeIntervalSince1970 })
            let publisher = ReportPublisher(
                sink: resources.sink, pid: process.pid, writeFolded: options.writeFolded, log: log, clock: resources.clock,
                followUp: resources.followUp)
            let waitSites = WaitSiteClassifier(
                idleSyscalls: resources.classifier.idleSyscalls, busyFramePatterns: options.busyFramePatterns,
                idleFramePatterns: options.idleFramePatterns, firstWaitIsParking: options.firstWaitIsParking)
            let activities = ActivityClassifier(
                classifier: resources.classifier, hasIdleFrames: !options.idleFramePatterns.isEmpty, clock: resources.clock,
                readFrozen: resources.readFrozen)
            loopProbeEdges = LoopProbeInterpreter(reader: options.loopTurns == .stackRule ? nil : resources.loopProbe)
            let configuration = Self.detectorConfiguration(
                options: options, age: resources.age, evidence: turnTracker.evidence, joinedAfterStart: joinedAfterStart)
            watchStart = WatchStart(
                age: resources.age, joinedAfterStart: joinedAfterStart, batch: options.batchThreshold != nil,
                mainModule: resources.mainModule)
            identity = IdentityActing(of: process, redactArgv: options.redactArgv, unit: options.unit, quiet: options.quiet, log: log)
            flow = StallReportFlow(
                detector: StallDetector(configuration: configuration), announcer: announcer, publisher: publisher,
                killPolicy: resources.killPolicy, workers: workers, identity: identity, probeInterval: options.probeInterval,
                stamp: resources.stamp)
            if let start = resources.programStart { flow.update { $0.noteProgramStart(at: start) } }
            sampler = StackSampler(target: thread, symbolizer: sampleSymbolizer, workers: workers, flow: flow, log: log)
            observer = MainThreadObserver(
                target: thread, waitSites: waitSites, activities: activities, flow: flow, workers: workers, wakeUp: wakeUp,
                sampler: sampler, identity: identity, turnTracker: turnTracker, childWaitsAreParking: options.childWaitsAreParking,
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
}
