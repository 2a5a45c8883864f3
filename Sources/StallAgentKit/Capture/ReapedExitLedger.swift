import CPtrace
import Synchronization

/// Exit statuses consumed by capture's waitpid. When the agent wraps a command it is both the
/// command's tracer (during a capture) and its parent: a waitpid for a ptrace stop can return
/// — and reap — the command's exit instead. The status is kept here so the wrapper still
/// exits with the command's real status.
public final class ReapedExitLedger: @unchecked Sendable {
    public static let shared = ReapedExitLedger()
    private let statuses = Mutex<[Int32: Int32]>([:])

    /// Records a raw wait status that reports an exit or a signal death.
    func record(pid: Int32, rawStatus: Int32) {
        let status: Int32
        if sa_wifexited(rawStatus) != 0 {
            status = sa_wexitstatus(rawStatus)
        } else if sa_wifsignaled(rawStatus) != 0 {
            status = 128 + sa_wtermsig(rawStatus)
        } else {
            return
        }
        statuses.withLock { $0[pid] = status }
    }

    /// The shell-style status (exit code, or 128 + signal) if capture reaped `pid`.
    public func take(pid: Int32) -> Int32? {
        statuses.withLock { $0.removeValue(forKey: pid) }
    }
}
