#if canImport(Glibc)
import Glibc
#endif

/// Signals the wrapper passes on to the command, each exactly once. Handlers only record
/// them; the run loop forwards.
///
/// Where a signal may already have reached the command depends on the process group:
/// - With a controlling terminal the command stays in the agent's process group, so job
///   control keeps working (it may read the terminal, Ctrl-Z stops both). A signal the
///   terminal generated (Ctrl-C: si_code SI_KERNEL) reached the whole foreground group, the
///   command included, so it is not sent again.
/// - Without one (CI runners, systemd, cron) the command leads a process group of its own
///   (`CommandRunner.commandGetsOwnGroup`), so a signal sent to the agent's whole group reaches
///   the agent only, and the agent passes every signal on.
public enum ForwardedSignals {
    public static let handled: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2]
    /// Signals the agent dies of when the command died of them after the agent got them too,
    /// so a shell stops its loop on Ctrl-C, as it would without the wrapper.
    public static let fatal: Set<Int32> = [SIGINT, SIGTERM, SIGHUP]

    /// Three flags per handled signal: pending from a process, pending from the terminal,
    /// ever received. Allocated before any handler is installed; handlers only store.
    nonisolated(unsafe) private static let flags: UnsafeMutablePointer<sig_atomic_t> = {
        let pointer = UnsafeMutablePointer<sig_atomic_t>.allocate(capacity: 18)
        pointer.initialize(repeating: 0, count: 18)
        return pointer
    }()

    /// Index of a handled signal; a switch, not an array search, because it runs in the handler.
    private static func slot(_ sig: Int32) -> Int? {
        switch sig {
        case SIGINT: return 0
        case SIGTERM: return 1
        case SIGHUP: return 2
        case SIGQUIT: return 3
        case SIGUSR1: return 4
        case SIGUSR2: return 5
        default: return nil
        }
    }

    public static func install() {
        _ = flags
        var mask = sigset_t()
        sigemptyset(&mask)
        for sig in handled { sigaddset(&mask, sig) }
        pthread_sigmask(SIG_UNBLOCK, &mask, nil)
        for sig in handled {
            var action = sigaction()
            action.__sigaction_handler.sa_sigaction = { number, info, _ in
                guard let slot = ForwardedSignals.slot(number) else { return }
                let fromTerminal = info.map { $0.pointee.si_code == 0x80 } ?? false
                ForwardedSignals.flags[(fromTerminal ? 6 : 0) + slot] = 1
                ForwardedSignals.flags[12 + slot] = 1
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_SIGINFO | SA_RESTART
            sigaction(sig, &action, nil)
        }
    }

    /// Signals received since the last call, and whether the terminal generated them.
    public static func take() -> [(signal: Int32, fromTerminal: Bool)] {
        var result: [(Int32, Bool)] = []
        for sig in handled {
            guard let slot = slot(sig) else { continue }
            for (offset, fromTerminal) in [(0, false), (6, true)] where flags[offset + slot] != 0 {
                flags[offset + slot] = 0
                result.append((sig, fromTerminal))
            }
        }
        return result
    }

    /// Whether the agent has received `sig` since `install()`.
    public static func received(_ sig: Int32) -> Bool {
        slot(sig).map { flags[12 + $0] != 0 } ?? false
    }

    /// Ends the agent by `sig` with its default action, as a shell expects of a program
    /// interrupted by it; exits 128 + `sig` if the signal does not end the process.
    public static func die(of sig: Int32) -> Never {
        signal(sig, SIG_DFL)
        var mask = sigset_t()
        sigemptyset(&mask)
        sigaddset(&mask, sig)
        pthread_sigmask(SIG_UNBLOCK, &mask, nil)
        raise(sig)
        exit(128 + sig)
    }
}
