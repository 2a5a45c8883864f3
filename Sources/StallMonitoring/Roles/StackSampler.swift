import StallDetection
import StallCapture
import StallProc

/// Takes the stack the detector asked for and gives it the sample: without a stop in the first
/// half of the threshold (`StopPolicy`), of the worker the main thread waits for when that
/// is the one watched, named as detection keeps frames, and nothing at all when the loop went
/// back to its wait since the probe. What a sample says that /proc cannot is kept as hints
/// (`SampleHints`) for the next probes. Apart from the monitor, it is tested with a fake target.
final class StackSampler {
    /// What the sampler reads of the target: its inspector and the main thread's probe files
    /// (`InspectedTarget`), or a fake in tests.
    protocol Target: AnyObject {
        var pid: Int32 { get }
        var name: String { get }
        /// The symbols frames are named with (see `SampleSymbolizer.Target`).
        var symbols: SampleSymbolizer.Target { get }
        /// A kernel sample of the running main thread is due (see
        /// `ProcessInspector.awaitsPerfSample`): no stop for it.
        func awaitsPerfSample(cpuNanos: UInt64) -> Bool
        /// The main thread's stack without a stop: running, the kernel's sample; blocked, the
        /// copy made while it sleeps. Nil when none could be taken.
        func stackWithoutStop(activity: ThreadActivity) -> (snapshot: ThreadSnapshot, stack: UnwoundStack)?
        /// The stack of `worker` (nil: the main thread), stopping it when it must.
        func captureStack(of worker: ThreadProbeFiles?, activity: ThreadActivity) throws -> (
            snapshot: ThreadSnapshot, stack: UnwoundStack
        )
        func threadName(_ tid: Int32) -> String?
        func fileKind(_ fd: Int) -> String?
        /// The name of process `tracer` (its comm), "?" when it cannot be read.
        func tracerName(_ tracer: Int32) -> String
    }

    /// What a call to `sample` did, for the summary's counts.
    enum Outcome: Equatable {
        /// A kernel sample is due: nothing taken, nothing counted.
        case awaitingKernelSample
        /// No stack could be taken without a stop while one was not allowed: asked again later.
        case putOff
        /// A sample was taken (or tried); `withStop` when the target was stopped for it.
        case taken(withStop: Bool)
    }

    /// A running thread the latest sample found in file I/O counts as in I/O, a futex wait it
    /// found under a lock-acquiring frame as a lock wait (see the type).
    var hints = SampleHints()
    private let target: Target
    private let symbolizer: SampleSymbolizer
    private let workers: WorkerDelegation
    private let flow: StallReportFlow
    private let log: (String) -> Void
    /// The main thread's last sample while it was off CPU, and its CPU time at the probe before
    /// that sample: see `sample`.
    private var lastAsleep: (cpuNanos: UInt64, activity: ThreadActivity, frames: [SampledFrame], isWhole: Bool)?

    init(
        target: Target, symbolizer: SampleSymbolizer, workers: WorkerDelegation, flow: StallReportFlow,
        log: @escaping (String) -> Void
    ) {
        self.target = target
        self.symbolizer = symbolizer
        self.workers = workers
        self.flow = flow
        self.log = log
    }

    private var detector: StallDetector { flow.detector }

    /// Samples the thread found in `activity` at `now`; `cpuNanos` is the main thread's CPU time
    /// at the probe (`cpuRead`: that probe read it, rather than keeping an older count),
    /// `isBackInLoop` says whether a capture caught the loop in its own wait.
    func sample(
        at now: Double, activity: ThreadActivity, cpuNanos: UInt64, cpuRead: Bool = true, in watch: StallReportFlow.Watch,
        isBackInLoop: (ThreadSnapshot) -> Bool
    ) -> Outcome {
        // No stop for a sample the kernel is about to take: asked again at the next probe.
        if target.awaitsPerfSample(cpuNanos: cpuNanos) {
            return .awaitingKernelSample
        }
        // A thread that has not run since the probe before its last sample (the same CPU time,
        // to the nanosecond, still in the same kind of wait) has the stack that sample found:
        // nothing is copied, unwound or named again. A blocked stall of 2 s in a family
        // (PostgreSQL's pg_sleep) cost the agent 80 ms of CPU, most of it forty identical
        // samples of a sleeping backend.
        if let last = lastAsleep, cpuRead, cpuNanos > 0, last.cpuNanos == cpuNanos, last.activity == activity,
            workers.followed == nil
        {
            flow.statistics.recordWithoutStop()
            flow.feed(in: watch) {
                $0.record(StackSample(time: now, activity: activity, frames: last.frames, isWhole: last.isWhole))
            }
            return .taken(withStop: false)
        }
        lastAsleep = nil
        // In the first half of the threshold, only without a stop (see `StopPolicy`).
        var stopFree: (snapshot: ThreadSnapshot, stack: UnwoundStack)?
        let phase = detector.episodePhase
        if StopPolicy.withoutStop(
            episodeAge: detector.episodeAge, threshold: phase.map { detector.configuration.threshold(for: $0) },
            batch: phase == .batch)
        {
            guard let sampled = target.stackWithoutStop(activity: activity) else {
                return .putOff
            }
            stopFree = sampled
        }
        // The thread the main thread waits for, when it is the one watched (batch only).
        let sampledWorker = workers.followed as? ThreadProbeFiles
        if let sampledWorker {
            workers.noteSampled(tid: sampledWorker.tid) { target.threadName(sampledWorker.tid) ?? "?" }
        }
        do {
            let (snapshot, stack) = try stopFree ?? target.captureStack(of: sampledWorker, activity: activity)
            if isBackInLoop(snapshot) {
                // The loop went back to its wait between the probe and the capture: this stack
                // is the loop's, not the work's, and must not name the stall.
                flow.feed(in: watch) { $0.record(StackSample(time: now, activity: .idle, frames: [])) }
                flow.feed(in: watch) { $0.noteLoopTurn(at: now) }
                return .taken(withStop: false)
            }
            hints.io.learn(
                interruptedSyscall: snapshot.interruptedSyscall, stopped: snapshot.method == .ptraceStop,
                fileKind: { target.fileKind($0) })
            if snapshot.method == .ptraceStop {
                flow.statistics.recordStop(pauseNanos: snapshot.pauseNanos)
            } else {
                flow.statistics.recordWithoutStop()
            }
            var sampled = symbolizer.frames(of: stack, batch: detector.episodePhase == .batch, in: target.symbols)
            if let sampledWorker {
                // glibc hands a finished thread's stack to the next thread it creates: the next
                // test's frames sat at the same addresses and were taken for the same
                // activations (one stall of two tests). Another thread's frame is another
                // activation; user-space stack addresses leave the top 16 bits free to say so.
                let tag = UInt64(truncatingIfNeeded: sampledWorker.tid) << 48
                for index in sampled.indices { sampled[index].cfa ^= tag }
            }
            if sampledWorker == nil {
                workers.learnWaitSite(batch: detector.phase == .batch, frames: sampled, syscall: snapshot.syscall)
            }
            hints.lock.learn(activity: activity, syscall: snapshot.syscall, frames: sampled)
            let isWhole = stack.end == .complete || stack.end == .truncatedAtLimit
            if sampledWorker == nil, activity != .running, activity != .stopped, snapshot.method != .ptraceStop {
                lastAsleep = (cpuNanos, activity, sampled, isWhole)
            }
            flow.feed(in: watch) { $0.record(StackSample(time: now, activity: activity, frames: sampled, isWhole: isWhole)) }
            return .taken(withStop: snapshot.method == .ptraceStop)
        } catch StallAgentError.alreadyTraced(_, let tracer) {
            // strace, gdb or another agent holds the target: no stacks, but the stall is still
            // timed from /proc. Said once per tracer, and in every report.
            flow.statistics.recordFailure()
            if symbolizer.noteTracer(tracer, name: { target.tracerName(tracer) }) {
                log(
                    "stallagent: \(target.name.terminalSafe) [\(target.pid)]: \(symbolizer.samplingNote!.terminalSafe); stalls are still timed from /proc"
                )
            }
            flow.feed(in: watch) { $0.record(StackSample(time: now, activity: activity, frames: [])) }
        } catch {
            flow.statistics.recordFailure()
            flow.feed(in: watch) { $0.record(StackSample(time: now, activity: activity, frames: [])) }
        }
        return .taken(withStop: false)
    }
}
