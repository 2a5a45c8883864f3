/// The fields of `/proc/PID/task/TID/stat` the agent uses.
public struct ProcThreadStat: Equatable, Sendable {
    /// One-letter scheduler state: R, S, D, T, t, Z, X, I …
    public var state: Character
    public var name: String
    public var ppid: Int32
    public var userTicks: UInt64
    public var systemTicks: UInt64
    /// Start time in clock ticks since boot; with the pid it identifies a process across pid reuse.
    public var startTicks: UInt64
    public var processor: Int32
    /// The kernel's task flags (field 9, `PF_*`).
    public var flags: UInt64 = 0

    /// `PF_EXITING`: the task is past `exit()`, on its way to a zombie. Its /proc files still
    /// read, but the kernel refuses new perf events and ptrace requests on it.
    public var isExiting: Bool { flags & 0x4 != 0 || state == "Z" || state == "X" }

    /// Parses a stat line. The name sits in parentheses and may itself contain spaces and
    /// parentheses, so the fields are located from the *last* `)`.
    public static func parse(_ text: Substring) -> ProcThreadStat? {
        guard let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")") else { return nil }
        let name = String(text[text.index(after: open)..<close])
        let rest = text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        // rest[0] is field 3 (state); field N is rest[N - 3].
        func field(_ n: Int) -> Substring? { n - 3 < rest.count ? rest[n - 3] : nil }
        guard let state = field(3)?.first,
            let ppid = field(4).flatMap({ Int32($0) }),
            let utime = field(14).flatMap({ UInt64($0) }),
            let stime = field(15).flatMap({ UInt64($0) }),
            let start = field(22).flatMap({ UInt64($0) })
        else { return nil }
        let processor = field(39).flatMap { Int32($0) } ?? -1
        return ProcThreadStat(
            state: state, name: name, ppid: ppid, userTicks: utime, systemTicks: stime,
            startTicks: start, processor: processor, flags: field(9).flatMap { UInt64($0) } ?? 0)
    }

    public static func parse(_ text: String) -> ProcThreadStat? { parse(text[...]) }
}
