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
    /// Field 52: the wait status its parent will get (`status << 8` for an exit, the signal
    /// number for a death), meaningful once the task is a zombie. The kernel shows it only to
    /// a reader allowed to ptrace the process, as the agent is.
    public var exitCode: Int32?
    /// Field 28: the bottom of the process's stack, placed anew (randomised) by every exec; the
    /// same program re-executing itself under the same pid and path changes it.
    public var startStack: UInt64?

    /// `PF_EXITING`: the task is past `exit()`, on its way to a zombie. Its /proc files still
    /// read, but the kernel refuses new perf events and ptrace requests on it.
    public var isExiting: Bool { flags & 0x4 != 0 || state == "Z" || state == "X" }

    /// Parses a stat line. The name sits in parentheses and may itself contain spaces and
    /// parentheses, so the fields are located from the *last* `)`.
    public static func parse(_ text: Substring) -> ProcThreadStat? {
        var text = text
        return text.withUTF8 { parse(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// The same from the file's bytes: the probe reads this file every few milliseconds per
    /// watched thread, and Swift's `Character`-wise splitting of the line was the largest part
    /// of a wrapped command's steady agent time.
    public static func parse(bytes: UnsafeRawBufferPointer) -> ProcThreadStat? {
        guard let open = bytes.firstIndex(of: UInt8(ascii: "(")), let close = bytes.lastIndex(of: UInt8(ascii: ")")),
            open < close
        else { return nil }
        let name = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[(open + 1)..<close]), as: UTF8.self)
        // Field N (1-based, as in proc(5)) starts at starts[N - 3]: field 3 (state) is the
        // first word after the name.
        var starts: [Int] = []
        starts.reserveCapacity(40)
        var ends: [Int] = []
        ends.reserveCapacity(40)
        var i = close + 1
        while i < bytes.count, starts.count < 50 {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A { i += 1 }
            guard i < bytes.count else { break }
            let start = i
            while i < bytes.count, bytes[i] != 0x20, bytes[i] != 0x0A { i += 1 }
            starts.append(start)
            ends.append(i)
        }
        func field(_ n: Int) -> UnsafeRawBufferPointer.SubSequence? {
            n - 3 < starts.count ? bytes[starts[n - 3]..<ends[n - 3]] : nil
        }
        func number(_ n: Int) -> UInt64? {
            guard let digits = field(n), !digits.isEmpty, digits.count <= 20 else { return nil }
            var value: UInt64 = 0
            for byte in digits {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                let (times10, o1) = value.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(UInt64(byte - 0x30))
                if o1 || o2 { return nil }
                value = sum
            }
            return value
        }
        func signed(_ n: Int) -> Int32? {
            guard let digits = field(n), let first = digits.first else { return nil }
            if first == UInt8(ascii: "-") {
                guard digits.count == 2, digits.last == UInt8(ascii: "1") else { return nil }
                return -1
            }
            return number(n).flatMap { Int32(exactly: $0) }
        }
        guard let stateByte = field(3)?.first, stateByte < 0x80,
            let ppid = signed(4),
            let utime = number(14),
            let stime = number(15),
            let start = number(22)
        else { return nil }
        return ProcThreadStat(
            state: Character(Unicode.Scalar(stateByte)), name: name, ppid: ppid, userTicks: utime, systemTicks: stime,
            startTicks: start, processor: signed(39) ?? -1, flags: number(9) ?? 0,
            exitCode: number(52).flatMap { Int32(exactly: $0) }, startStack: number(28))
    }

    public static func parse(_ text: String) -> ProcThreadStat? { parse(text[...]) }
}
