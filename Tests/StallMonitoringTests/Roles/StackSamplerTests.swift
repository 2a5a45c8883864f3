import StallDetection
import StallProc
import StallReports
import Testing

@testable import StallCapture
@testable import StallMonitoring

/// What the sampler takes of a fake target and gives the detector: nothing while a kernel sample
/// is due, only a stop-free stack in the first half of the threshold, a stop past it, nothing of
/// the work's when the loop went back to its wait, and a tracer said once.
@Suite struct StackSamplerTests {
    struct Refused: Error {}

    final class FakeTarget: StackSampler.Target {
        let pid: Int32 = 4242
        let name = "app"
        let symbols: SampleSymbolizer.Target = {
            let symbols = SampleSymbolizerTests.FakeSymbols()
            symbols.withoutLines = [SampleSymbolizerTests.native]
            return symbols
        }()
        var kernelSampleDue = false
        var stopFree: (snapshot: ThreadSnapshot, stack: UnwoundStack)?
        var capture: () throws -> (snapshot: ThreadSnapshot, stack: UnwoundStack) = { throw Refused() }
        var stopFreeAsked = 0
        var captures = 0
        var tracerLookups = 0

        func awaitsPerfSample(cpuNanos: UInt64) -> Bool { kernelSampleDue }
        func stackWithoutStop(activity: ThreadActivity) -> (snapshot: ThreadSnapshot, stack: UnwoundStack)? {
            stopFreeAsked += 1
            return stopFree
        }
        func captureStack(of worker: ThreadProbeFiles?, activity: ThreadActivity) throws -> (snapshot: ThreadSnapshot, stack: UnwoundStack) {
            captures += 1
            return try capture()
        }
        func threadName(_ tid: Int32) -> String? { nil }
        func fileKind(_ fd: Int) -> String? { fd == 5 ? "/var/lib/data.db" : nil }
        func tracerName(_ tracer: Int32) -> String {
            tracerLookups += 1
            return "strace"
        }
    }

    static func taken(_ method: ThreadSnapshot.Method, pauseNanos: UInt64 = 0, interrupted: (Int, UInt64)? = nil)
        -> (snapshot: ThreadSnapshot, stack: UnwoundStack)
    {
        var snapshot = ThreadSnapshot(
            pid: 4242, tid: 4242, registers: RegisterFile(), stackStart: 0, stack: [], method: method, pauseNanos: pauseNanos,
            syscall: nil, timeNanos: 0)
        snapshot.interruptedSyscall = interrupted
        return (snapshot, UnwoundStack(frames: [UnwoundFrame(address: 0x40_2020, stackPointer: 0, isSignalFrame: false)], end: .complete))
    }

    final class Harness {
        let target = FakeTarget()
        let watch = StallReportFlowTests.FakeWatch()
        var lines: [String] = []
        let flow = StallReportFlowTests.Harness().flow
        lazy var sampler = StackSampler(
            target: target, symbolizer: SampleSymbolizer(appFrames: AppFrameRule()),
            workers: WorkerDelegation(follower: WorkerThreadFollower(target: WorkerThreadFollowerTests.FakeTarget())), flow: flow,
            log: { [unowned self] in lines.append($0) })
        var backInLoop = false

        /// Idle, then busy from 1 s to `busyUntil` (the threshold is 1 s).
        init(busyUntil: Double) {
            flow.feed(in: watch) { $0.observe(ThreadObservation(time: 0.5, activity: .idle, cpuNanos: 0, runQueueNanos: 0)) }
            flow.feed(in: watch) { $0.observe(ThreadObservation(time: 1, activity: .running, cpuNanos: 0, runQueueNanos: 0)) }
            flow.feed(in: watch) { $0.observe(ThreadObservation(time: busyUntil, activity: .running, cpuNanos: 1, runQueueNanos: 0)) }
        }

        func sample(at now: Double) -> StackSampler.Outcome {
            sampler.sample(at: now, activity: .running, cpuNanos: 1, in: watch, isBackInLoop: { _ in backInLoop })
        }
    }

    @Test func nothingIsTakenWhileAKernelSampleIsDue() {
        let harness = Harness(busyUntil: 1.8)
        harness.target.kernelSampleDue = true
        #expect(harness.sample(at: 1.8) == .awaitingKernelSample)
        #expect(harness.target.captures == 0)
        #expect(harness.target.stopFreeAsked == 0)
        #expect(harness.flow.detector.ring.isEmpty)
    }

    /// 0.1 s into the episode, a stop-free stack or none: no stop is made; without one the
    /// sample is put off, with one it is recorded and counted as taken without a stop.
    @Test func earlyInAnEpisodeOnlyWithoutAStop() {
        let harness = Harness(busyUntil: 1.1)
        harness.target.capture = { StackSamplerTests.taken(.ptraceStop, pauseNanos: 5000) }
        #expect(harness.sample(at: 1.1) == .putOff)
        harness.target.stopFree = Self.taken(.perfSample)
        #expect(harness.sample(at: 1.1) == .taken(withStop: false))
        #expect(harness.target.captures == 0)
        #expect(harness.flow.statistics.capturesWithoutStop == 1)
        #expect(harness.flow.detector.ring.count == 1)
    }

    /// Past half the threshold the thread is stopped for its stack; a stop inside a write to a
    /// file leaves the I/O hint, which the next probe reads.
    @Test func laterAStopIsMadeAndItsPauseCounted() {
        let harness = Harness(busyUntil: 1.8)
        harness.target.capture = { StackSamplerTests.taken(.ptraceStop, pauseNanos: 5000, interrupted: (1, 5)) }
        #expect(harness.sample(at: 1.8) == .taken(withStop: true))
        #expect(harness.target.captures == 1)
        #expect(harness.flow.statistics.episodeWithStop == 1)
        #expect(abs(harness.flow.statistics.pauseSecondsTotal - 5e-6) < 1e-12)
        #expect(harness.sampler.hints.io.inFileIO)
        #expect(harness.sampler.hints.correction(of: .running, in: .running) == .ioWait)
        #expect(harness.flow.detector.ring.newest?.activity == .running)
        #expect(harness.flow.detector.ring.newest?.frames.map(\.function) == ["run"])
    }

    /// A capture that caught the loop back in its own wait names nothing: the loop turned, the
    /// episode ends there and the next begins, and no stop is counted.
    @Test func aCaptureBackInTheLoopsWaitNamesNothing() {
        let harness = Harness(busyUntil: 1.8)
        harness.target.capture = { StackSamplerTests.taken(.ptraceStop, pauseNanos: 5000) }
        harness.backInLoop = true
        #expect(harness.sample(at: 1.8) == .taken(withStop: false))
        #expect(harness.flow.statistics.episodeWithStop == 0)
        #expect(harness.flow.detector.ring.isEmpty)
        #expect(harness.watch.turns.count == 1)
        #expect(abs((harness.watch.turns.first ?? 0) - 0.8) < 1e-9)
        #expect(harness.flow.detector.episodeStartTime == 1.8)
    }

    /// A thread asleep since the probe before its last sample (its CPU time unchanged) is not
    /// copied again: the sample repeats the last one's frames at the new time. Once it ran, or
    /// is in another kind of wait, it is taken afresh.
    @Test func aThreadThatHasNotRunSinceItsLastSampleIsNotTakenAgain() throws {
        let harness = Harness(busyUntil: 1.2)
        harness.target.stopFree = Self.taken(.withoutStop)
        let sampler = harness.sampler
        func sample(_ now: Double, _ activity: ThreadActivity, cpu: UInt64) -> StackSampler.Outcome {
            sampler.sample(at: now, activity: activity, cpuNanos: cpu, in: harness.watch, isBackInLoop: { _ in false })
        }
        #expect(sample(1.05, .blockedCall, cpu: 500) == .taken(withStop: false))
        #expect(harness.target.stopFreeAsked == 1)
        #expect(sample(1.10, .blockedCall, cpu: 500) == .taken(withStop: false))
        #expect(sample(1.15, .blockedCall, cpu: 500) == .taken(withStop: false))
        #expect(harness.target.stopFreeAsked == 1, "asleep since: the last sample's frames again")
        let recorded = harness.flow.detector.ring.samples.suffix(3)
        #expect(recorded.map(\.time) == [1.05, 1.10, 1.15])
        #expect(Set(recorded.map(\.frames)).count == 1)
        #expect(sample(1.20, .blockedCall, cpu: 501) == .taken(withStop: false))
        #expect(harness.target.stopFreeAsked == 2, "it ran: taken again")
        #expect(sample(1.25, .ioWait, cpu: 501) == .taken(withStop: false))
        #expect(harness.target.stopFreeAsked == 3, "another kind of wait: taken again")
        // A probe that could not read the CPU time says nothing of whether the thread ran.
        #expect(
            sampler.sample(at: 1.30, activity: .ioWait, cpuNanos: 501, cpuRead: false, in: harness.watch, isBackInLoop: { _ in false })
                == .taken(withStop: false))
        #expect(harness.target.stopFreeAsked == 4, "CPU time not read: taken again")
    }

    /// A sample taken with a ptrace stop is not repeated: the stop itself ran the thread.
    @Test func aSampleTakenWithAStopIsNotRepeated() {
        let harness = Harness(busyUntil: 1.8)
        harness.target.capture = { StackSamplerTests.taken(.ptraceStop, pauseNanos: 40_000) }
        func sample(_ now: Double) -> StackSampler.Outcome {
            harness.sampler.sample(at: now, activity: .blockedCall, cpuNanos: 700, in: harness.watch, isBackInLoop: { _ in false })
        }
        #expect(sample(1.8) == .taken(withStop: true))
        #expect(sample(1.85) == .taken(withStop: true))
        #expect(harness.target.captures == 2)
    }

    /// Another tracer holding the target: no stack, a failure counted, an empty sample still
    /// timed, and one line for the tracer however many samples it refuses.
    @Test func anotherTracerIsSaidOnce() {
        let harness = Harness(busyUntil: 1.8)
        harness.target.capture = { throw StallAgentError.alreadyTraced(pid: 4242, tracer: 777) }
        #expect(harness.sample(at: 1.8) == .taken(withStop: false))
        #expect(harness.sample(at: 1.85) == .taken(withStop: false))
        #expect(harness.lines.count == 1)
        #expect(harness.lines.first?.contains("app [4242]") == true)
        #expect(harness.lines.first?.hasSuffix("stalls are still timed from /proc") == true)
        #expect(harness.flow.statistics.episodeFailed == 2)
        #expect(harness.flow.detector.ring.isEmpty, "no frames to keep")
        #expect(harness.flow.detector.nextSampleTime != nil)
    }
}
