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
}
