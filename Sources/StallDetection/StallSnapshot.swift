/// Everything detection knows about one stall at one moment: what the agent needs to write
/// (or rewrite) the stall report (docs/report-schema.md). Snapshots are values; a later update is a new
/// snapshot with the same `id` and a higher `revision`.
public struct StallSnapshot: Sendable {
    /// Identifies the stall; increments per detector, starting at 1. Updates keep the id.
    public var id: Int
    /// 0 for `stallStarted`, +1 for every later snapshot of the same stall.
    public var revision: Int
    public var trigger: StallSnapshotTrigger
    public var phase: StallPhase
    /// When the busy episode began (its first busy probe).
    public var startTime: Double
    /// The latest time accounted: the probe that ended it, or the latest probe while ongoing.
    public var endTime: Double
    /// True while the thread is still busy: the report is marked ongoing.
    public var ongoing: Bool
    /// How it ended; nil while ongoing.
    public var ending: StallEnding?
    /// Stall age in seconds: `endTime - startTime` less the time spent stopped.
    public var duration: Double
    /// The threshold that applied (`DetectorConfiguration.threshold(for: phase)`).
    public var threshold: Double
    /// Stack samples taken during the episode, including any the ring has dropped.
    public var sampleCount: Int
    /// The configured interval between samples, for "Duration Sampled … (50 ms interval)".
    public var sampleInterval: Double
    /// Times of the episode's first and latest samples (nil without samples).
    public var firstSampleTime: Double?
    public var lastSampleTime: Double?
    public var stateBreakdown: StallStateBreakdown
    /// The reason printed on the report: `causeReason`, or `died` when the target died stalled.
    public var reason: StallReason
    /// What the time breakdown says (or `deadlock` when the agent found a wait-for cycle);
    /// kept when `reason` becomes `died` so the report can still say what it was doing.
    public var causeReason: StallReason
    /// Whether the agent reported a wait-for cycle through the main thread.
    public var deadlock: Bool
    public var heaviestStack: HeaviestStack?
    /// The innermost frame (function and CFA) present in every sample; nil if none.
    public var stallFrame: SampledFrame?
    /// Call tree of the samples still in the ring.
    public var callTree: CallTreeNode
    /// Recognises the same stall when it recurs (`StallFingerprint`, built from `causeReason`).
    public var fingerprint: String
    /// The samples still in the ring, oldest first (folded stacks, sample listings).
    public var samples: [StackSample]
    /// What told the agent the loop turned (nil: only the idle wait itself, no extra evidence).
    public var loopTurnEvidence: LoopTurnEvidence?

    public init(
        id: Int, revision: Int, trigger: StallSnapshotTrigger, phase: StallPhase, startTime: Double,
        endTime: Double, ongoing: Bool, ending: StallEnding?, duration: Double, threshold: Double,
        sampleCount: Int, sampleInterval: Double, firstSampleTime: Double?, lastSampleTime: Double?,
        stateBreakdown: StallStateBreakdown, reason: StallReason, causeReason: StallReason, deadlock: Bool,
        heaviestStack: HeaviestStack?, stallFrame: SampledFrame?, callTree: CallTreeNode, fingerprint: String,
        samples: [StackSample]
    ) {
        self.id = id
        self.revision = revision
        self.trigger = trigger
        self.phase = phase
        self.startTime = startTime
        self.endTime = endTime
        self.ongoing = ongoing
        self.ending = ending
        self.duration = duration
        self.threshold = threshold
        self.sampleCount = sampleCount
        self.sampleInterval = sampleInterval
        self.firstSampleTime = firstSampleTime
        self.lastSampleTime = lastSampleTime
        self.stateBreakdown = stateBreakdown
        self.reason = reason
        self.causeReason = causeReason
        self.deadlock = deadlock
        self.heaviestStack = heaviestStack
        self.stallFrame = stallFrame
        self.callTree = callTree
        self.fingerprint = fingerprint
        self.samples = samples
    }

    /// Samples taken but no longer in `samples` (the ring wrapped).
    public var droppedSampleCount: Int { max(0, sampleCount - samples.count) }

    /// Time covered by samples ("Duration Sampled"), 0 with fewer than two.
    public var sampledDuration: Double {
        guard let first = firstSampleTime, let last = lastSampleTime else { return 0 }
        return last - first
    }

    /// True for an on-demand capture rather than a stall.
    public var isOnDemand: Bool { trigger == .requested }
}
