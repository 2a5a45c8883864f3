/// What a watched process turned out to be, judged from what it showed (issue 24), for the
/// family table and `systemctl status`.
public enum ProcessKind: String, Sendable, CaseIterable {
    /// Returns to an event loop's wait (its home wait is known).
    case loop
    /// Parks with children: waits for signals or its children, or in a call it re-enters
    /// (gunicorn's arbiter).
    case supervisor
    /// Parks without children: blocks in one call for good (multiprocessing's resource tracker).
    case helper
    /// A batch process (a wrapped command's test runner): no loop, judged by its held frames.
    case batch
    /// Never seen idle: busy for its whole watch, or watched too briefly to tell.
    case busy
}
