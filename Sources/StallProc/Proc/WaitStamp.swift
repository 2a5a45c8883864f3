import StallDetection

/// What a thread's wait stamps since the last drain add up to (`LoopTurnCounter.drainStamps`):
/// the kernel stamps each entry into a counted wait and each exit from it with the time, on
/// the agent's clock, and the site (the user PC and SP of the system call, the raw pair
/// `/proc/TID/syscall` shows). Added up against the one site the caller knows as home.
public struct WaitStampSummary: Equatable, Sendable {
    /// How many stamps.
    public var stamps = 0
    /// The kernel dropped stamps (the ring filled): the rest does not tell the whole story.
    public var lost = false
    /// The first stamp at a site other than the home one given, if any was.
    public var otherSite: HomeWaitTracker.Site?
    /// The last stamp: an entry (true) or an exit, and when.
    public var lastEntered = false
    public var lastTime: Double?
    /// The last entry into the home wait.
    public var lastHomeEntry: Double?
    /// An exit from the home wait after `lastHomeEntry` (or after every stamp before, when
    /// there is no entry), nil when there is none since.
    public var leftHome: Double?

    public init() {}
}
