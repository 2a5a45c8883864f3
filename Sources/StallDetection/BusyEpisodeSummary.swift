/// A finished busy episode, stall or not: cheap to emit for every episode, so the agent can keep
/// metrics (episode count, duration histogram, time near the threshold) without reports.
public struct BusyEpisodeSummary: Hashable, Sendable {
    public var phase: StallPhase
    public var startTime: Double
    public var endTime: Double
    /// Busy time, stopped time excluded.
    public var duration: Double
    public var ending: StallEnding
    public var stateBreakdown: StallStateBreakdown
    public var sampleCount: Int
    /// The stall's id when the episode became one, else nil.
    public var stallID: Int?

    public init(
        phase: StallPhase, startTime: Double, endTime: Double, duration: Double, ending: StallEnding,
        stateBreakdown: StallStateBreakdown, sampleCount: Int, stallID: Int?
    ) {
        self.phase = phase
        self.startTime = startTime
        self.endTime = endTime
        self.duration = duration
        self.ending = ending
        self.stateBreakdown = stateBreakdown
        self.sampleCount = sampleCount
        self.stallID = stallID
    }

    public var wasStall: Bool { stallID != nil }
}
