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
    /// The agent stopped watching (shutdown, detach) while the thread was still busy; the
    /// duration is a lower bound.
    case monitoringStopped
}
