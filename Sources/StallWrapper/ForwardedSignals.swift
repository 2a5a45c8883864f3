import StallMonitoring
#if canImport(Glibc)
import Glibc
#endif

/// Signals the wrapper passes on to the command, each exactly once. They are queued to the
/// `SignalInbox`; the run loop takes and forwards them.
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

    /// Opens the inbox for the forwarded signals and SIGCHLD, which wakes the run loop the
    /// moment a child exits instead of at its next probe. Before any thread is started.
    public static func install() throws {
        // SA_NOCLDSTOP: no SIGCHLD for stops, the captures' ptrace stops included (the kernel
        // reads the flag whatever the action). SIG_DFL, not SIG_IGN: ignoring SIGCHLD would
        // make the kernel reap the children whose status the wrapper reports.
        var action = sigaction()
        action.__sigaction_handler.sa_handler = SIG_DFL
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_NOCLDSTOP
        sigaction(SIGCHLD, &action, nil)
        try SignalInbox.open(handled + [SIGCHLD])
    }

    /// Signals to forward received since the last call, and whether the terminal generated
    /// them. Takes SIGCHLD from the inbox too: it only wakes the loop.
    public static func take() -> [(signal: Int32, fromTerminal: Bool)] {
        SignalInbox.take().filter { $0.signal != SIGCHLD }.map { ($0.signal, $0.fromTerminal) }
    }

    /// Whether the agent has received `sig` since `install()`.
    public static func received(_ sig: Int32) -> Bool {
        SignalInbox.hasReceived(sig)
    }

    /// Ends the agent by `sig` with its default action (see `SignalInbox.die(of:)`).
    public static func die(of sig: Int32) -> Never {
        SignalInbox.die(of: sig)
    }
}
