import CPtrace

/// x86-64 general registers, indexed by DWARF/libunwind register number. A snapshot taken
/// without stopping the thread knows only some of them (SP, PC and the syscall arguments);
/// unknown registers stay nil so the unwinder can say so instead of guessing.
public struct RegisterFile: Equatable, Sendable {
    public static let rax = 0, rdx = 1, rcx = 2, rbx = 3, rsi = 4, rdi = 5, rbp = 6, rsp = 7
    public static let r8 = 8, r9 = 9, r10 = 10, r11 = 11, r12 = 12, r13 = 13, r14 = 14, r15 = 15
    public static let rip = 16
    public static let count = 17

    public var values: [UInt64?] = Array(repeating: nil, count: RegisterFile.count)

    public init() {}

    public init(ptrace regs: user_regs_struct) {
        values = [
            regs.rax, regs.rdx, regs.rcx, regs.rbx, regs.rsi, regs.rdi, regs.rbp, regs.rsp,
            regs.r8, regs.r9, regs.r10, regs.r11, regs.r12, regs.r13, regs.r14, regs.r15, regs.rip,
        ].map { Optional($0) }
    }

    /// What `/proc/…/syscall` reveals of a thread blocked in a system call.
    public init(syscall number: Int, arguments: [UInt64], sp: UInt64, pc: UInt64) {
        values[RegisterFile.rax] = UInt64(bitPattern: Int64(number))
        let argumentRegisters = [RegisterFile.rdi, RegisterFile.rsi, RegisterFile.rdx, RegisterFile.r10, RegisterFile.r8, RegisterFile.r9]
        for (register, value) in zip(argumentRegisters, arguments) { values[register] = value }
        values[RegisterFile.rsp] = sp
        values[RegisterFile.rip] = pc
    }

    public subscript(_ index: Int) -> UInt64? {
        get { index >= 0 && index < values.count ? values[index] : nil }
        set { values[index] = newValue }
    }

    public var pc: UInt64 { values[RegisterFile.rip] ?? 0 }
    public var sp: UInt64 { values[RegisterFile.rsp] ?? 0 }
}
