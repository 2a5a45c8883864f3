import CPtrace
import Synchronization

/// Exit statuses consumed by capture's waitpid. When the agent wraps a command it is both the
/// command's tracer (during a capture) and its parent: a waitpid for a ptrace stop can return
/// — and reap — the command's exit instead. The status is kept here so the wrapper still
/// exits with the command's real status.
public final class ReapedExitLedger: Sendable {
    public static let shared = ReapedExitLedger()
    private let statuses = Mutex<[Int32: (status: Int32, signal: Int32)]>([:])

    /// Records a raw wait status that reports an exit or a signal death.
    func record(pid: Int32, rawStatus: Int32) {
        let entry: (status: Int32, signal: Int32)
        if sa_wifexited(rawStatus) != 0 {
            entry = (sa_wexitstatus(rawStatus), 0)
        } else if sa_wifsignaled(rawStatus) != 0 {
            entry = (128 + sa_wtermsig(rawStatus), sa_wtermsig(rawStatus))
        } else {
            return
        }
        statuses.withLock { $0[pid] = entry }
    }

    /// Records how a process the wrapper reaped ended, so its monitor can tell an exit from a
    /// death (kept until `take`, bounded).
    public func note(pid: Int32, status: Int32, signal: Int32) {
        statuses.withLock {
            if $0.count >= 4096 { $0.removeAll() }
            $0[pid] = (status, signal)
        }
    }

    /// The same as `take` without removing it.
    public func peek(pid: Int32) -> (status: Int32, signal: Int32)? {
        statuses.withLock { $0[pid] }
    }

    /// The shell-style status (exit code, or 128 + signal) if capture reaped `pid`, and the
    /// signal that killed it (0 when it exited): 130 from `exit 130` is not a SIGINT death.
    public func take(pid: Int32) -> (status: Int32, signal: Int32)? {
        statuses.withLock { $0.removeValue(forKey: pid) }
    }
}
