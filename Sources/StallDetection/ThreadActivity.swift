/// What the target's main thread was doing at one probe, as the `/proc` classifier in `Proc/`
/// decides it (see docs/architecture.md, "Detection model"). Detection only consumes it; it never reads `/proc` itself.
public enum ThreadActivity: String, Codable, CaseIterable, Sendable {
    /// Sleeping in an idle-wait syscall (epoll_wait, poll, select, …): back in its event loop.
    case idle
    /// Runnable: on a CPU or waiting in the run queue (schedstat tells which).
    case running
    /// Waiting for a mutex / futex / file lock.
    case lockWait
    /// Blocked in disk or file I/O (state `D`, fsync, read/write on a regular file).
    case ioWait
    /// Blocked in any other synchronous call: sleep, socket or pipe read, connect, wait4, …
    case blockedCall
    /// Stopped by job control or another tracer; the stall clock pauses while stopped.
    case stopped
    /// The thread or the process has exited.
    case gone

    /// True for the states that make up a busy episode and are worth sampling. `stopped` is
    /// excluded on purpose: a SIGSTOP'ed thread is not doing the target's work, sampling it
    /// shows nothing new, and the stall clock does not run while it is stopped.
    public var isBusy: Bool {
        switch self {
        case .running, .lockWait, .ioWait, .blockedCall: return true
        case .idle, .stopped, .gone: return false
        }
    }
}
