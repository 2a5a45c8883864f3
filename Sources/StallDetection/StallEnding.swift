/// How a stall (or busy episode) came to an end.
public enum StallEnding: String, Codable, CaseIterable, Sendable {
    /// The thread was seen idle again, or its loop was seen to turn (loop-turn evidence): the
    /// duration is the true stall duration.
    case returnedToIdle
    /// The process or thread died while busy; an open stall gets reason `died`.
    case targetDied
    /// The process ended itself while busy (exit or return from main, whatever its status):
    /// the work ended with it, so the stall keeps its reason and its duration is whole (a test
    /// process whose last act was a long sleep was blocked, not killed).
    case targetExited
    /// A wrapped command's descendant ended while busy, and the agent could not see how: it is
    /// not the agent's child, and its parent reaped it between two probes. In a test run that is
    /// most often the process's own exit (a test process whose last act was a sleep), so the
    /// stall keeps its reason and its length, and says that much and no more.
    case targetEnded
    /// The agent stopped watching (shutdown, detach) while the thread was still busy; the
    /// duration is a lower bound.
    case monitoringStopped
}
