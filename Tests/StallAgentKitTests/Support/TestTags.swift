import Testing

/// How `scripts/test` schedules the integration tests (it reads these tags from the test list,
/// prints them at the start of a run, and never matches test names).
extension Tag {
    /// The assertion depends on CPU share or exact timing (a stall's length against the
    /// fixture's own log, hang vs starved, wake-up counts, how fast a stopped agent lets go):
    /// run one at a time with nothing beside it.
    @Tag static var timed: Self
    /// Long suites spread over the two named lanes so that the three lanes end together;
    /// every other integration suite runs in the third.
    @Tag static var laneOne: Self
    @Tag static var laneTwo: Self
    /// A hostile-input case (issues 15 and 27); `scripts/test` prints their tally.
    @Tag static var hostile: Self
}
