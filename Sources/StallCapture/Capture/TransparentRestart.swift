import StallProc

/// Which blocked system calls a ptrace stop leaves invisible to the program. A stop interrupts
/// the call; on resume the kernel restarts it only if it was interrupted with one of the
/// ERESTART codes. epoll_wait, epoll_pwait, sigtimedwait and friends return EINTR instead
/// (measured: every stop), and socket calls do too once the socket has a timeout
/// (`sock_intr_errno`), so a stop-and-copy fallback is allowed only for the calls below.
public enum TransparentRestart {
    /// Calls that restart (ERESTARTSYS or restart_syscall) whatever they wait on.
    static let always: Set<Int> = [
        35,  // nanosleep
        230,  // clock_nanosleep
        202,  // futex
        61,  // wait4
        247,  // waitid
        73,  // flock
        74,  // fsync
        75,  // fdatasync
    ]
    /// Reads and writes restart on pipes, terminals and files, not on sockets.
    static let onNonSockets: Set<Int> = [0, 1, 17, 18, 19, 20]  // read write pread64 pwrite64 readv writev

    /// `fileKind` names what a file descriptor refers to (`/proc/PID/fd/N`'s link).
    public static func allowsStop(_ syscall: ProcSyscallInfo?, fileKind: (Int) -> String?) -> Bool {
        guard case .inSyscall(let number, let arguments, _, _) = syscall else { return false }
        if always.contains(number) { return true }
        guard onNonSockets.contains(number), let fd = arguments.first, fd < 1 << 20,
            let kind = fileKind(Int(fd))
        else { return false }
        return !kind.hasPrefix("socket:")
    }
}
