/// Settings of `StallDetector`. Times are seconds on the agent's monotonic clock.
public struct DetectorConfiguration: Hashable, Codable, Sendable {
    /// Age at which a busy episode becomes a stall once the process has been seen idle.
    public var threshold: Double
    /// Age at which a busy episode becomes a stall while the process has never been seen idle
    /// (start-up). Never effectively below `threshold`: see `threshold(for:)`.
    public var launchThreshold: Double
    /// Minimum time between two stack samples of a busy thread.
    public var sampleInterval: Double
    /// Samples kept per episode; older ones are dropped (60 s at the defaults).
    public var ringCapacity: Int
    /// Re-capture an unchanged stall at threshold × 1, 1, 2, 3, 5, 8 … after detection.
    /// Off: re-capture every `threshold` instead (still at once when the stack changes).
    public var annealing: Bool
    /// True when the target is (re)started under the agent, so its first episode is start-up.
    /// The agent sets false when attaching to a process that is already running (`--pid`):
    /// a busy first probe there is not start-up and gets the loop threshold.
    public var startsInLaunchPhase: Bool
    /// Minimum time between two "stack changed" updates, so a thread alternating between two
    /// equally heavy stacks does not rewrite its report every few samples.
    public var minimumUpdateSpacing: Double
    /// How reasons are derived from the state breakdown.
    public var classifier: StallReasonClassifier
    /// What tells the agent the loop turned; reports name it. With `.stackRule` the samples
    /// decide (see `StallDetector.record`); otherwise the agent passes `loopTurned` to `observe`.
    public var loopTurnEvidence: LoopTurnEvidence?
    /// A gap between two probes longer than this (the agent itself was held up: a first
    /// symbolization of a huge binary, a stopped agent) that ends with the loop turned or idle
    /// says nothing of when in the gap that happened: the episode ends at the probe before it,
    /// so the agent's own delay never becomes the target's stall.
    public var maximumProbeGap: Double = 0.1
    /// Stack rule: samples that must hold the frame before it is a stall. A loop whose turns
    /// pass through one frame two times in three would fake a held frame over a few samples
    /// (an agent short of CPU takes few); over 16 the chance is 0.15 %.
    public var minimumHeldSamples = 16
    public var usesStackRule: Bool { loopTurnEvidence == .stackRule }
    /// Batch processes (a test runner never waits in an event loop, so neither idle probes nor
    /// loop turns delimit its work): while the process has not been seen idle, a frame outside
    /// the runner's own frames held in every sample for this long is a stall (phase `batch`,
    /// see `StallDetector`). nil: no batch rule; start-up uses `launchThreshold`.
    public var batchThreshold: Double?
    /// Batch rule: the agent began watching the process after its start-up (a descendant of a
    /// wrapped command, found once it had lived half the threshold), so its first sample may
    /// already be inside a slow test and teaches no runner frames: its runner frames are learnt
    /// as they go on holding while work under them comes and goes (docs/architecture.md, "The
    /// batch rule"). An exec starts the process afresh, and its first sample is start-up again.
    public var batchJoinedAfterStart = false
    /// Batch rule: a first sample taken this long after the program started (`StallDetector.
    /// noteProgramStart`) came late — a starved agent, its first probe held up — and may already
    /// be inside the program's slow work (a script that sleeps 20 ms after its start): it is then
    /// read as a process found after its start-up, not as start-up. Found at start, the agent
    /// takes its first sample within milliseconds of the first probe.
    public var batchLateFirstSample = 0.25
    /// Batch rule: samples that must hold the frame before it is a stall. Fewer than the loop's
    /// stack rule: no loop can fake a held frame here, only a runner frame, and those are
    /// excluded by `batchDispatcherFrames` and the first sample instead.
    public var batchMinimumHeldSamples = 4
    /// Batch rule: a held frame under which this many distinct other frames have run during one
    /// episode is a dispatcher (the runner's loop calling test after test), not a stalled test.
    /// A test stuck in one call shows a handful (its callees, the vDSO); a runner hundreds.
    public var batchDispatcherFrames = 48
    /// Batch rule: a held frame whose direct callees were this many different frames during one
    /// episode is a dispatcher too (a C runner calling test_1, test_2, … from one loop).
    public var batchDispatcherChildren = 6
    /// Batch rule: the sample interval while no frame has been held for half the threshold.
    /// Sampling is what costs a batch process (a ptrace stop of a running thread); most of its
    /// work is short, so it is sampled slowly until something is held, then at `sampleInterval`.
    /// A tenth of the threshold: a test's start is only known to lie between two samples, so
    /// this bounds the error of a slow test's length (a quarter of it cut up to 0.5 s off or
    /// onto tests at --threshold 2s, beyond issue 25's ±10 %).
    public var batchSlowSampleInterval: Double {
        max(sampleInterval, threshold(for: .batch) / 10)
    }

    public init(
        threshold: Double = 1.0,
        launchThreshold: Double = 10.0,
        sampleInterval: Double = 0.05,
        ringCapacity: Int = 1200,
        annealing: Bool = true,
        startsInLaunchPhase: Bool = true,
        minimumUpdateSpacing: Double = 0.25,
        classifier: StallReasonClassifier = StallReasonClassifier(),
        loopTurnEvidence: LoopTurnEvidence? = nil,
        batchThreshold: Double? = nil
    ) {
        self.batchThreshold = batchThreshold
        self.loopTurnEvidence = loopTurnEvidence
        self.threshold = threshold
        self.launchThreshold = launchThreshold
        self.sampleInterval = sampleInterval
        self.ringCapacity = ringCapacity
        self.annealing = annealing
        self.startsInLaunchPhase = startsInLaunchPhase
        self.minimumUpdateSpacing = minimumUpdateSpacing
        self.classifier = classifier
    }

    /// The threshold for an episode of this phase. Start-up is never held to a stricter limit
    /// than the loop, so a `--threshold` above the launch threshold applies to both.
    public func threshold(for phase: StallPhase) -> Double {
        switch phase {
        case .loop: return threshold
        case .launch: return max(threshold, launchThreshold)
        case .batch: return batchThreshold ?? threshold
        }
    }
}
