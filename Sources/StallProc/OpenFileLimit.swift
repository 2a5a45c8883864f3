#if canImport(Glibc)
import Glibc
#endif

/// Each watched process holds several descriptors (its /proc files, perf counters, its
/// wake-up), so a family of hundreds outgrows the soft limit of 1024 that systemd and most
/// shells give: the agent raises its soft limit to the hard one at start, as the kernel
/// allows any process to (docs/architecture.md, "The engine").
public enum OpenFileLimit {
    /// Raises the soft limit to the hard limit; returns the limit now in force.
    @discardableResult
    public static func raiseToHardLimit() -> UInt64 {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return UInt64(raised.rlim_cur) }
        }
        return UInt64(limit.rlim_cur)
    }

    /// The soft limit now in force.
    public static var soft: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return limit.rlim_cur > UInt64(Int32.max) ? Int(Int32.max) : Int(limit.rlim_cur)
    }

    /// Descriptors a watch of many processes (the host agent's families, a wrapped command's
    /// descendants) keeps free for discovery, reports and its outputs before it takes on
    /// another process: a watched process holds about four.
    public static let watchReserve = 64

    /// True when fewer than `reserve` descriptors are left below the soft limit, judged by the
    /// lowest free one (descriptors are handed out lowest first, so every one below it is in
    /// use): a watch of many processes stops taking new ones there, names them, and keeps
    /// what it needs to discover and report (issue 27: past the limit, a family lost every
    /// new process without a word).
    public static func nearlyExhausted(reserve: Int) -> Bool {
        let lowest = fcntl(0, F_DUPFD_CLOEXEC, 0)
        guard lowest >= 0 else { return true }
        close(lowest)
        return Int(lowest) >= soft - reserve
    }
}
