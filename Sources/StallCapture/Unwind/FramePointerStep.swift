/// One step by frame record, for code that has no CFI (JIT code, V8's embedded builtins,
/// hand-written assembly): `push rbp; mov rbp, rsp` leaves the caller's RBP at [RBP] and the
/// return address at [RBP + 8]. A frame record is trusted only if it lies in the copied stack
/// at or above the frame's stack pointer and its return address looks like one.
enum FramePointerStep {
    /// The caller's RSP, RBP and return address, or nil when `rbp` is not a frame record of
    /// this stack. Other registers are unknown after such a step: code without CFI says
    /// nothing about where it saved them.
    static func caller(ofFrameAt sp: UInt64, rbp: UInt64, context: UnwindContext) -> RegisterFile? {
        guard rbp >= sp, rbp & 7 == 0, context.isInStack(rbp), context.isInStack(rbp &+ 8),
            let saved = context.readWord(rbp), let returnAddress = context.readWord(rbp &+ 8),
            returnAddress == 0 || context.isPlausibleReturnAddress(returnAddress)
        else { return nil }
        var registers = RegisterFile()
        registers[RegisterFile.rsp] = rbp &+ 16
        registers[RegisterFile.rbp] = saved
        registers[RegisterFile.rip] = returnAddress
        return registers
    }
}
