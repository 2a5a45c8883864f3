#if canImport(Glibc)
import Glibc
#endif

/// SIGINT/SIGTERM/SIGHUP ask the monitor loop to finish: open reports are finalised and the
/// target detached before exiting. The signals are queued to the `SignalInbox`, which the
/// loop reads.
public enum StopRequest {
    public static var isRequested: Bool {
        _ = SignalInbox.take()
        return SignalInbox.firstReceived != nil
    }

    /// The signal that asked for the stop, 0 before one did.
    public static var signal: Int32 { SignalInbox.firstReceived ?? 0 }

    /// Opens the inbox for the stop signals; before any thread is started. Also when a parent
    /// started us with them blocked (test runners, some supervisors): they are read, not
    /// delivered, either way.
    public static func install(signals: [Int32] = [SIGINT, SIGTERM, SIGHUP]) throws {
        try SignalInbox.open(signals)
    }
}
