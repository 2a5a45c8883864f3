/// Which watchdog applies to an episode, like iOS's separate launch and resume watchdogs.
public enum StallPhase: String, Codable, CaseIterable, Sendable {
    /// The process has not yet been seen idle: it is still starting up, and start-up work is
    /// allowed to take longer (`DetectorConfiguration.launchThreshold`).
    case launch
    /// The process has reached its event loop at least once (`DetectorConfiguration.threshold`).
    case loop
}
