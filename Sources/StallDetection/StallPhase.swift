/// Which watchdog applies to an episode, like iOS's separate launch and resume watchdogs.
public enum StallPhase: String, Codable, CaseIterable, Sendable {
    /// The process has not yet been seen idle: it is still starting up, and start-up work is
    /// allowed to take longer (`DetectorConfiguration.launchThreshold`).
    case launch
    /// The process has reached its event loop at least once (`DetectorConfiguration.threshold`).
    case loop
    /// The process has not been seen idle and is watched as a batch process (a test runner,
    /// a compiler): a frame outside the runner's own frames held in every sample past
    /// `DetectorConfiguration.batchThreshold` is a stall.
    case batch
}
