/// How a stall (or busy episode) came to an end.
public enum StallEnding: String, Codable, CaseIterable, Sendable {
    /// The thread was seen idle again, or its loop was seen to turn (loop-turn evidence): the
    /// duration is the true stall duration.
    case returnedToIdle
    /// The process or thread died while busy; an open stall gets reason `died`.
    case targetDied
    /// The agent stopped watching (shutdown, detach) while the thread was still busy; the
    /// duration is a lower bound.
    case monitoringStopped
}
