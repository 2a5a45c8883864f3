import CLibunwind
import StallSymbols

/// Unwinds captured snapshots with libunwind's remote API and our own accessors: memory reads
/// are served from the copied stack and from the modules' mapped files, never from the live
/// target, so unwinding costs the target nothing. One unwinder serves one process; its
/// libunwind address space caches unwind rules across samples (UNW_CACHE_GLOBAL).
///
/// libunwind does the DWARF CFI steps. Two cases it gets wrong on its own are decided here:
/// code without CFI (JIT code, V8's builtins) is stepped by its frame record and CFI resumes
/// at the first caller that has it; and a snapshot taken without a stop has no RBP, which
/// frame-pointer code needs, so the frame record is searched on the stack and accepted only
/// when the whole chain it implies checks out (`FramePointerRecovery`).
public final class SnapshotUnwinder {
    let context: UnwindContext
    private var addressSpace: unw_addr_space_t?
    private var accessors = unw_accessors_t()
    private let cursor = UnsafeMutablePointer<unw_cursor_t>.allocate(capacity: 1)

    public var maxFrames = 256

    public init(modules: ProcessModules) {
        context = UnwindContext(modules: modules)
        accessors.find_proc_info = SnapshotUnwinder.findProcInfo
        accessors.put_unwind_info = { _, _, _ in }
        accessors.get_dyn_info_list_addr = { _, _, _ in -Int32(UNW_ENOINFO.rawValue) }
        accessors.access_mem = SnapshotUnwinder.accessMemory
        accessors.access_reg = SnapshotUnwinder.accessRegister
        accessors.access_fpreg = { _, _, _, _, _ in -Int32(UNW_EBADREG.rawValue) }
        accessors.resume = { _, _, _ in -Int32(UNW_EINVAL.rawValue) }
        accessors.get_proc_name = nil
        addressSpace = sa_unw_create_addr_space(&accessors)
        if let addressSpace { _ = sa_unw_set_caching_policy(addressSpace, 1) }
        context.addressSpace = addressSpace
    }

    deinit {
        if let addressSpace { sa_unw_destroy_addr_space(addressSpace) }
        cursor.deallocate()
    }

    public var modules: ProcessModules { context.modules }

    /// Replace the module list (after dlopen or exec); cached unwind rules are dropped.
    public func update(modules: ProcessModules) {
        guard modules !== context.modules else { return }
        context.modules = modules
        context.dropTables()
        if let addressSpace { sa_unw_flush_cache(addressSpace) }
    }

    public func unwind(_ snapshot: ThreadSnapshot) -> UnwoundStack {
        guard addressSpace != nil else { return UnwoundStack(frames: [], end: .noUnwindInfo) }
        return snapshot.stack.withUnsafeBytes { stackBytes in
            context.stackStart = snapshot.stackStart
            context.stack = stackBytes
            context.changedWords = snapshot.changedWords
            context.neededChangedWord = false
            defer {
                context.stack = UnsafeRawBufferPointer(start: nil, count: 0)
                context.changedWords = []
            }
            var frames: [UnwoundFrame] = []
            var end = walk(from: snapshot.registers, resumingAtReturnAddress: false, frames: &frames, recoverFramePointer: true)
            // The frames before it stand: their words read the same before the stop and after.
            if context.neededChangedWord && end != .complete { end = .stackChanged }
            if snapshot.copiedAfterResume && end == .outsideCopiedStack { end = .stackChanged }
            return UnwoundStack(frames: frames, end: end)
        }
    }

    /// Appends the frames from `start` outwards. `resumingAtReturnAddress`: `start.pc` is a
    /// return address (a walk resumed after a frame-pointer step or for a candidate frame
    /// record), so its CFI is looked up one byte back, inside the call. With
    /// `recoverFramePointer` false a missing RBP ends the walk (candidate chains are checked
    /// as they are, without a search of their own).
    func walk(
        from start: RegisterFile, resumingAtReturnAddress: Bool, frames: inout [UnwoundFrame], recoverFramePointer: Bool
    ) -> UnwindEnd {
        guard let addressSpace else { return .noUnwindInfo }
        let arg = Unmanaged.passUnretained(context).toOpaque()
        var registers = start
        var atReturnAddress = resumingAtReturnAddress
        while true {
            if frames.isEmpty, !atReturnAddress, let caller = callerOfReturn(registers) {
                frames.append(
                    UnwoundFrame(address: registers.pc, stackPointer: registers.sp, isSignalFrame: false, framePointer: registers[RegisterFile.rbp]))
                registers = caller
                atReturnAddress = true
                continue
            }
            var initial = registers
            if atReturnAddress { initial[RegisterFile.rip] = registers.pc &- 1 }
            context.registers = initial
            context.lastError = nil
            context.missingRegister = nil
            guard sa_unw_init_remote(cursor, addressSpace, arg) == 0 else {
                if frames.isEmpty {
                    frames.append(UnwoundFrame(address: registers.pc, stackPointer: registers.sp, isSignalFrame: false))
                }
                return .badFrame
            }
            var firstOfWalk = true
            var next: RegisterFile?
            while next == nil {
                guard frames.count < maxFrames else { return .truncatedAtLimit }
                var ip: unw_word_t = 0
                var sp: unw_word_t = 0
                _ = sa_unw_get_ip(cursor, &ip)
                _ = sa_unw_get_sp(cursor, &sp)
                let resumed = firstOfWalk && atReturnAddress
                let address = resumed ? registers.pc : ip
                // A zero return address read from the stack ends many real stacks, but a
                // candidate chain must reach an end the CFI declares: stale frame records
                // often hold a zero where the return address would be.
                if address == 0 { return recoverFramePointer ? .complete : .badFrame }
                let signal = !resumed && sa_unw_is_signal_frame(cursor) > 0
                if let last = frames.last {
                    if sp < last.stackPointer || (sp == last.stackPointer && address == last.address) { return .badFrame }
                    // Where a return address should be there is data: the chain is broken, and
                    // a frame made of data would only mislead.
                    if !context.isExecutable(address) { return .notCode }
                }
                let frame = UnwoundFrame(
                    address: address, stackPointer: sp, isSignalFrame: signal,
                    framePointer: firstOfWalk ? registers[RegisterFile.rbp] : register(RegisterFile.rbp))
                frames.append(frame)
                if context.procedureStart(covering: frame.lookupAddress(isInnermost: frames.count == 1)) == nil {
                    let rbp = firstOfWalk ? registers[RegisterFile.rbp] : register(RegisterFile.rbp)
                    guard let rbp else {
                        return recoverFramePointer ? FramePointerRecovery(unwinder: self).recover(frames: &frames) : .missingRegister
                    }
                    guard let caller = FramePointerStep.caller(ofFrameAt: sp, rbp: rbp, context: context) else {
                        return .noUnwindInfo
                    }
                    if caller.pc == 0 { return recoverFramePointer ? .complete : .badFrame }
                    next = caller
                    break
                }
                let step = sa_unw_step(cursor)
                if step > 0 {
                    firstOfWalk = false
                    continue
                }
                if step == 0 { return .complete }
                if context.missingRegister == RegisterFile.rbp && recoverFramePointer {
                    return FramePointerRecovery(unwinder: self).recover(frames: &frames)
                }
                return context.lastError ?? SnapshotUnwinder.end(forError: -step)
            }
            if let next {
                registers = next
                atReturnAddress = true
            }
        }
    }

    /// The caller of a thread stopped on a `ret`: the function has restored every register it
    /// saved, so its caller has the same registers, with the return address at [RSP]. The CFI
    /// cannot be used there: GCC states no rule change after `pop rbp`/`leave`, so it still
    /// puts the caller's RBP at CFA − 16, a word below the stack pointer that no stack copy
    /// holds (a ptrace copy and a perf sample both start at RSP), and the walk ended after
    /// two frames.
    private func callerOfReturn(_ registers: RegisterFile) -> RegisterFile? {
        let pc = registers.pc
        guard let module = context.modules.module(containing: pc), module.isReturnInstruction(pc),
            let returnAddress = context.readWord(registers.sp), context.isPlausibleReturnAddress(returnAddress)
        else { return nil }
        var caller = registers
        caller[RegisterFile.rip] = returnAddress
        caller[RegisterFile.rsp] = registers.sp &+ 8
        return caller
    }

    /// A register of the cursor's current frame, nil when the snapshot does not have it.
    private func register(_ number: Int) -> UInt64? {
        var value: unw_word_t = 0
        let result = _Ux86_64_get_reg(cursor, Int32(number), &value)
        context.missingRegister = nil
        context.lastError = nil
        return result == 0 ? value : nil
    }

    private static func end(forError code: Int32) -> UnwindEnd {
        switch UInt32(code) {
        case UNW_EBADREG.rawValue: return .missingRegister
        case UNW_ENOINFO.rawValue: return .noUnwindInfo
        default: return .badFrame
        }
    }

    // MARK: libunwind accessors (C callbacks: no captures, state through `arg`)

    private static let findProcInfo:
        @convention(c) (
            unw_addr_space_t?, unw_word_t, UnsafeMutablePointer<unw_proc_info_t>?, Int32, UnsafeMutableRawPointer?
        ) -> Int32 = { space, ip, info, needInfo, arg in
            guard let arg else { return -Int32(UNW_EINVAL.rawValue) }
            let context = Unmanaged<UnwindContext>.fromOpaque(arg).takeUnretainedValue()
            guard let module = context.modules.module(containing: ip), let table = context.table(for: module),
                ip >= table.pointee.start_ip, ip < table.pointee.end_ip
            else { return -Int32(UNW_ENOINFO.rawValue) }
            return sa_unw_search_table(space, ip, table, info, needInfo, arg)
        }

    private static let accessMemory:
        @convention(c) (
            unw_addr_space_t?, unw_word_t, UnsafeMutablePointer<unw_word_t>?, Int32, UnsafeMutableRawPointer?
        ) -> Int32 = { _, address, value, write, arg in
            guard write == 0, let arg, let value else { return -Int32(UNW_EINVAL.rawValue) }
            let context = Unmanaged<UnwindContext>.fromOpaque(arg).takeUnretainedValue()
            if let word = context.readWord(address) {
                value.pointee = word
                return 0
            }
            // An address just below the copy is a corrupt frame; above it, the copy was too short.
            if address >= context.stackEnd, context.modules.module(containing: address) == nil {
                context.lastError = .outsideCopiedStack
            }
            return -Int32(UNW_EINVAL.rawValue)
        }

    private static let accessRegister:
        @convention(c) (
            unw_addr_space_t?, unw_regnum_t, UnsafeMutablePointer<unw_word_t>?, Int32, UnsafeMutableRawPointer?
        ) -> Int32 = { _, register, value, write, arg in
            guard write == 0, let arg, let value else { return -Int32(UNW_EINVAL.rawValue) }
            let context = Unmanaged<UnwindContext>.fromOpaque(arg).takeUnretainedValue()
            guard let word = context.registers[Int(register)] else {
                context.lastError = .missingRegister
                context.missingRegister = Int(register)
                return -Int32(UNW_EBADREG.rawValue)
            }
            value.pointee = word
            return 0
        }
}
