#if canImport(Glibc)
import Glibc
#endif

/// SIGINT/SIGTERM ask the monitor loop to finish: open reports are finalised and the target
/// detached before exiting. A flag polled by the loop, set from an async-signal-safe handler.
public enum StopRequest {
    nonisolated(unsafe) static var requested: sig_atomic_t = 0
    nonisolated(unsafe) static var signalNumber: sig_atomic_t = 0

    public static var isRequested: Bool { requested != 0 }
    public static var signal: Int32 { signalNumber }

    public static func install(signals: [Int32] = [SIGINT, SIGTERM, SIGHUP]) {
        // A parent may have started us with these blocked (test runners, some supervisors);
        // a blocked SIGTERM would never reach the handler and the watch could not be stopped.
        var mask = sigset_t()
        sigemptyset(&mask)
        for sig in signals { sigaddset(&mask, sig) }
        pthread_sigmask(SIG_UNBLOCK, &mask, nil)
        for sig in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                StopRequest.signalNumber = number
                StopRequest.requested = 1
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0
            sigaction(sig, &action, nil)
        }
    }
}
