#if canImport(Glibc)
import Glibc
#endif

/// Errors a user can act on. Each carries the text the CLI prints and the exit code it
/// documents, so the executable stays a thin translation layer.
public enum StallAgentError: Error, CustomStringConvertible, Equatable {
    case noSuchProcess(pid: Int32)
    case permissionDenied(pid: Int32, operation: String)
    case zombie(pid: Int32)
    case kernelThread(pid: Int32)
    case alreadyTraced(pid: Int32, tracer: Int32)
    case targetExited(pid: Int32)
    case captureTimedOut(tid: Int32, milliseconds: Int)
    /// A blocked thread moved while its stack was copied without a stop (and stopping it
    /// was not allowed): the copy may be torn. Callers retry.
    case threadMoved(tid: Int32)
    case system(operation: String, errno: Int32)
    case invalidArgument(String)
    case reportDirectory(path: String, reason: String)

    public var description: String {
        switch self {
        case .noSuchProcess(let pid):
            return "no process with pid \(pid)"
        case .permissionDenied(let pid, let operation):
            return """
                not allowed to trace process \(pid) (\(operation) was refused). Tracing needs the same user as the \
                target plus a permissive ptrace policy, or CAP_SYS_PTRACE. Fix: run as the target's \
                user or as root (sudo), or grant the capability (setcap cap_sys_ptrace+ep \
                $(command -v stallagent)); if /proc/sys/kernel/yama/ptrace_scope is 1 or more, \
                non-root tracing of non-children is refused (set it to 0, or use root).
                """
        case .zombie(let pid):
            return "process \(pid) is a zombie (it has exited; its parent has not reaped it): nothing to capture"
        case .kernelThread(let pid):
            return "process \(pid) is a kernel thread: it has no user-space stack to capture"
        case .alreadyTraced(let pid, let tracer):
            return "process \(pid) is already being traced by pid \(tracer) (a debugger or strace?); detach it first"
        case .targetExited(let pid):
            return "process \(pid) exited during the capture"
        case .captureTimedOut(let tid, let ms):
            return "thread \(tid) did not stop within \(ms) ms (probably in uninterruptible I/O); it was left running"
        case .threadMoved(let tid):
            return "thread \(tid) kept moving while its stack was copied; no consistent stack"
        case .system(let operation, let code):
            return "\(operation) failed: \(String(cString: strerror(code)))"
        case .invalidArgument(let text):
            return text
        case .reportDirectory(let path, let reason):
            return "report directory \(path): \(reason)"
        }
    }

    /// Documented in the README's exit-code table.
    public var exitCode: Int32 {
        switch self {
        case .noSuchProcess, .targetExited: return 3
        case .permissionDenied: return 4
        case .zombie, .kernelThread, .alreadyTraced: return 5
        case .captureTimedOut, .threadMoved: return 6
        case .invalidArgument: return 64
        case .reportDirectory: return 73
        case .system: return 1
        }
    }
}
