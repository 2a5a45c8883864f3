/// What `StallDetector` tells the agent. Events come in time order within one call's result.
public enum DetectorEvent: Sendable {
    /// The episode's age crossed the threshold: write the report now, marked ongoing.
    case stallStarted(StallSnapshot)
    /// Re-capture of an ongoing stall (annealing, changed heaviest stack, deadlock flag):
    /// rewrite the report.
    case stallUpdated(StallSnapshot)
    /// Final snapshot, `ongoing == false`, with the true duration: finalise the report.
    case stallEnded(StallSnapshot)
    /// Any busy episode ended (after `stallEnded` when it was a stall); for metrics.
    case episodeEnded(BusyEpisodeSummary)
    /// The process was seen idle for the first time: start-up is over, the loop threshold
    /// applies from now on.
    case launchPhaseEnded(at: Double)

    /// The snapshot carried by a stall event.
    public var snapshot: StallSnapshot? {
        switch self {
        case .stallStarted(let snapshot), .stallUpdated(let snapshot), .stallEnded(let snapshot): return snapshot
        case .episodeEnded, .launchPhaseEnded: return nil
        }
    }

    /// A short name for logs and test assertions.
    public var kind: String {
        switch self {
        case .stallStarted: return "stallStarted"
        case .stallUpdated: return "stallUpdated"
        case .stallEnded: return "stallEnded"
        case .episodeEnded: return "episodeEnded"
        case .launchPhaseEnded: return "launchPhaseEnded"
        }
    }
}
