#if canImport(Glibc)
import Glibc
#endif

/// Errors a user can act on. Each carries the text the CLI prints and the exit code it
/// documents, so the executable stays a thin translation layer.
public enum StallAgentError: Error, CustomStringConvertible, Equatable {
    case noSuchProcess(pid: Int32)
    case permissionDenied(pid: Int32, operation: String)
    /// A refused attach under systemd whose unit does not grant the capabilities.
    case missingCapability(pid: Int32, unit: String?, capabilities: [String])
    case zombie(pid: Int32)
    /// The main thread called pthread_exit while others run on: the process is alive, its
    /// main thread is a zombie.
    case mainThreadExited(pid: Int32, threads: Int)
    case kernelThread(pid: Int32)
    /// A Go program: its goroutines are not tied to threads (docs/architecture.md, "Go
    /// programs are not watched").
    case goProgram(pid: Int32)
    case alreadyTraced(pid: Int32, tracer: Int32)
    case targetExited(pid: Int32)
    case captureTimedOut(tid: Int32, milliseconds: Int)
    /// A blocked thread moved while its stack was copied without a stop (and stopping it
    /// was not allowed): the copy may be torn. Callers retry.
    case threadMoved(tid: Int32)
    case system(operation: String, errno: Int32)
    case invalidArgument(String)
    case reportDirectory(path: String, reason: String)
    /// A configuration file problem; `line` is 1-based when the problem has a place.
    case configuration(path: String, line: Int?, message: String)
    /// The metrics listener could not bind its address (in use, not permitted).
    case listen(address: String, errno: Int32)

    public var description: String {
        switch self {
        case .noSuchProcess(let pid):
            return "no process with pid \(pid)"
        case .permissionDenied(let pid, let operation) where geteuid() == 0:
            // Root refused: the advice to use root or setcap would send the user in a circle.
            return """
                not allowed to trace process \(pid) (\(operation) was refused), even as root. The process is \
                protected from this agent: it may belong to another user namespace or container (trace it \
                from inside that container), be guarded by a security module (AppArmor, SELinux: check the \
                audit log), or this agent may lack CAP_SYS_PTRACE in its bounding set (a container or a \
                systemd unit that drops it).
                """
        case .permissionDenied(let pid, let operation):
            return """
                not allowed to trace process \(pid) (\(operation) was refused). Tracing needs the same user as the \
                target plus a permissive ptrace policy, or CAP_SYS_PTRACE together with CAP_DAC_READ_SEARCH \
                (the target's /proc/PID/syscall is readable by its owner only). Fix: run as the target's \
                user or as root (sudo), or grant the capabilities (setcap cap_sys_ptrace,cap_dac_read_search+ep \
                $(command -v stallagent)); if /proc/sys/kernel/yama/ptrace_scope is 1 or more, \
                non-root tracing of non-children is refused (set it to 0, or use root).
                """
        case .missingCapability(let pid, let unit, let capabilities):
            let names = capabilities.joined(separator: " ")
            let place = unit.map { "the unit \($0) (systemctl edit \($0))" } ?? "the agent's unit"
            return """
                not allowed to trace process \(pid): this agent runs as a systemd service without \(names). \
                Add \(names) to both AmbientCapabilities= and CapabilityBoundingSet= of \(place), then \
                restart it (the shipped units grant CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_PERFMON).
                """
        case .zombie(let pid):
            return "process \(pid) is a zombie (it has exited; its parent has not reaped it): nothing to capture"
        case .mainThreadExited(let pid, let threads):
            return
                "process \(pid)'s \(Self.mainThreadExitedPhrase(threads: threads)): there is no main thread to watch "
                + "(`stallagent dump --all-threads --pid \(pid)` shows the others)"
        case .kernelThread(let pid):
            return "process \(pid) is a kernel thread: it has no user-space stack to capture"
        case .goProgram(let pid):
            return "process \(pid) is a Go program: \(Self.goProgramPhrase) (`stallagent dump --all-threads --pid \(pid)` shows its threads)"
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
        case .configuration(let path, let line, let message):
            // A message quotes the file: a 20 MB line must not be echoed whole (issue 27).
            let shown = message.count > 400 ? String(message.prefix(400)) + "… (\(message.utf8.count) bytes)" : message
            return "\(path)\(line.map { ":\($0)" } ?? ""): \(shown)"
        case .listen(let address, let code):
            return "cannot listen for metrics on \(address): \(String(cString: strerror(code)))"
                + (code == EADDRINUSE ? " (another process has this port; pick another with --metrics-listen)" : "")
        }
    }

    /// Why a Go program is not watched, in every message that says so.
    public static let goProgramPhrase =
        "its goroutines move between threads, so no thread's stack or state says which goroutine is stalled; "
        + "stallagent does not watch Go programs"

    /// "main thread has exited (pthread_exit) while N other threads run on": the one wording
    /// the error, a pidfile's refusal and a watch that sees it happen share.
    public static func mainThreadExitedPhrase(threads: Int) -> String {
        "main thread has exited (pthread_exit) while \(threads) other " + (threads == 1 ? "thread runs" : "threads run") + " on"
    }

    /// Documented in the README's exit-code table.
    public var exitCode: Int32 {
        switch self {
        case .noSuchProcess, .targetExited: return 3
        case .permissionDenied, .missingCapability: return 4
        case .zombie, .mainThreadExited, .kernelThread, .goProgram, .alreadyTraced: return 5
        case .captureTimedOut, .threadMoved: return 6
        case .invalidArgument: return 64
        case .reportDirectory: return 73
        case .configuration: return 78
        case .listen: return 69
        case .system: return 1
        }
    }
}
