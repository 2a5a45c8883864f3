/// What `/proc/PID/task/TID/syscall` says about a thread.
///
/// For a thread blocked in a system call the kernel prints the call's number, its six
/// arguments, and the user stack pointer and program counter — enough to copy and unwind the
/// stack without stopping the thread.
public enum ProcSyscallInfo: Equatable, Sendable {
    /// The thread is on a CPU or runnable: nothing stable to read.
    case running
    /// Blocked, but not in a system call (e.g. stopped, or in a page fault); only SP/PC are known.
    case blockedOutsideSyscall(sp: UInt64, pc: UInt64)
    case inSyscall(number: Int, arguments: [UInt64], sp: UInt64, pc: UInt64)

    public static func parse(_ text: Substring) -> ProcSyscallInfo? {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard let first = words.first else { return nil }
        if first == "running" { return .running }
        func hex(_ s: Substring) -> UInt64? {
            UInt64(s.hasPrefix("0x") ? s.dropFirst(2) : s, radix: 16)
        }
        if first == "-1" {
            guard words.count >= 3, let sp = hex(words[1]), let pc = hex(words[2]) else { return nil }
            return .blockedOutsideSyscall(sp: sp, pc: pc)
        }
        guard words.count >= 9, let number = Int(first) else { return nil }
        var arguments: [UInt64] = []
        for word in words[1...6] {
            guard let value = hex(word) else { return nil }
            arguments.append(value)
        }
        guard let sp = hex(words[7]), let pc = hex(words[8]) else { return nil }
        return .inSyscall(number: number, arguments: arguments, sp: sp, pc: pc)
    }

    public static func parse(_ text: String) -> ProcSyscallInfo? { parse(text[...]) }

    public var stackPointer: UInt64? {
        switch self {
        case .running: return nil
        case .blockedOutsideSyscall(let sp, _), .inSyscall(_, _, let sp, _): return sp
        }
    }

    public var programCounter: UInt64? {
        switch self {
        case .running: return nil
        case .blockedOutsideSyscall(_, let pc), .inSyscall(_, _, _, let pc): return pc
        }
    }

    public var syscallNumber: Int? {
        if case .inSyscall(let number, _, _, _) = self { return number }
        return nil
    }

    public var syscallName: String? { syscallNumber.map(ProcSyscallInfo.name(ofSyscall:)) }

    public static func name(ofSyscall number: Int) -> String {
        SyscallTable.names[number] ?? "syscall_\(number)"
    }

    public static func number(ofSyscall name: String) -> Int? {
        SyscallTable.names.first(where: { $0.value == name })?.key
    }
}
