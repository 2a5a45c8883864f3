import CPosix
import Synchronization

import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// The signals the agent acts on, taken synchronously: blocked in every thread and read
/// from one signalfd by the loop that steps the monitors. No Swift code runs in a signal
/// handler, and a loop asleep in `poll` wakes the moment one is queued — a flag set by a
/// handler could land between the loop's check and its sleep and wait out the sleep.
///
/// A process holds one inbox, opened by the command that runs the loop before it starts any
/// thread (threads inherit the mask of the thread that starts them; one that did not block
/// a signal would take it with its default action and kill the agent mid-report). Children
/// get an empty mask and default actions back (`sa_spawn`).
public enum SignalInbox {
    public struct Delivery: Equatable, Sendable {
        public var signal: Int32
        /// A terminal's line discipline sent it (Ctrl-C, Ctrl-\, hang-up): si_code SI_KERNEL.
        /// Such a signal went to the whole foreground process group.
        public var fromTerminal: Bool
    }

    private struct State {
        var descriptor: Int32 = -1
        var received: Set<Int32> = []
        var first: Int32?
    }

    private static let state = Mutex(State())

    /// Blocks `signals` in the calling thread, and so in every thread it starts afterwards,
    /// and opens the inbox they are queued to. Adding signals to an open inbox is not
    /// supported: one loop, one set, chosen at start.
    public static func open(_ signals: [Int32]) throws {
        try state.withLock { state in
            precondition(state.descriptor < 0, "the signal inbox is opened once")
            let fd = signals.withUnsafeBufferPointer { sa_signal_inbox_open($0.baseAddress, $0.count) }
            guard fd >= 0 else { throw StallAgentError.system(operation: "signalfd", errno: errno) }
            state.descriptor = fd
        }
    }

    /// The inbox's descriptor, readable while a signal is queued, for a loop's `poll` set;
    /// nil until `open`.
    public static var descriptor: Int32? {
        state.withLock { $0.descriptor >= 0 ? $0.descriptor : nil }
    }

    /// Takes every queued signal, oldest first. Each standard signal is queued once at most:
    /// a second one sent before the first was taken is merged into it, as with a handler.
    public static func take() -> [Delivery] {
        state.withLock { state in
            guard state.descriptor >= 0 else { return [] }
            var taken: [Delivery] = []
            var number: Int32 = 0
            var code: Int32 = 0
            while sa_signal_inbox_take(state.descriptor, &number, &code) == 1 {
                taken.append(Delivery(signal: number, fromTerminal: code == 0x80))
                state.received.insert(number)
                if state.first == nil { state.first = number }
            }
            return taken
        }
    }

    /// Whether `sig` has been taken from the inbox since it was opened.
    public static func hasReceived(_ sig: Int32) -> Bool {
        state.withLock { $0.received.contains(sig) }
    }

    /// The first signal taken from the inbox, if any.
    public static var firstReceived: Int32? {
        state.withLock { $0.first }
    }

    /// Ends the agent by `sig` with its default action, as a shell expects of a program
    /// interrupted by it; exits 128 + `sig` if the signal does not end the process.
    public static func die(of sig: Int32) -> Never {
        // Blocked, it would stay queued; handled or ignored (inherited SIG_IGN), it would not kill.
        signal(sig, SIG_DFL)
        var mask = sigset_t()
        sigemptyset(&mask)
        sigaddset(&mask, sig)
        pthread_sigmask(SIG_UNBLOCK, &mask, nil)
        raise(sig)
        exit(128 + sig)
    }
}
