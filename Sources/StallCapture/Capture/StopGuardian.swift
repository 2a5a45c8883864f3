import CPtrace

/// The small process that resumes the agent if it is stopped (SIGSTOP, SIGTSTP) while it holds
/// a target stopped (stop_guard.h). It is the agent's child, so code that walks the agent's
/// children — the wrapper looking for the command's descendants — must leave it out.
public enum StopGuardian {
    /// Its pid, or 0 before the first capture started it.
    public static var pid: Int32 { sa_stop_guard_pid() }
}
