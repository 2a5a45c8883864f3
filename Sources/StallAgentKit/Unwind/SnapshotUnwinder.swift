import CLibunwind

/// Unwinds captured snapshots with libunwind's remote API and our own accessors: memory reads
/// are served from the copied stack and from the modules' mapped files, never from the live
/// target, so unwinding costs the target nothing. One unwinder serves one process; its
/// libunwind address space caches unwind rules across samples (UNW_CACHE_GLOBAL).
public final class SnapshotUnwinder {
    /// State the C callbacks reach through libunwind's `arg` pointer.
    final class Context {
        var modules: ProcessModules
        var registers = RegisterFile()
        var stackStart: UInt64 = 0
        var stack: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)
        var lastError: UnwindEnd?
        /// The stack pointer of the frame being stepped, for frame-pointer recovery.
        var currentFrameSP: UInt64 = 0
        /// Per-module search tables handed to libunwind; kept alive while the modules are.
        var tables: [ObjectIdentifier: UnsafeMutablePointer<unw_dyn_info_t>] = [:]

        init(modules: ProcessModules) { self.modules = modules }

        deinit { for table in tables.values { table.deallocate() } }

        func table(for module: LoadedModule) -> UnsafeMutablePointer<unw_dyn_info_t>? {
            let key = ObjectIdentifier(module)
            if let table = tables[key] { return table }
            guard let header = module.image?.ehFrameHeader, module.textEnd > module.textStart else { return nil }
            let info = UnsafeMutablePointer<unw_dyn_info_t>.allocate(capacity: 1)
            info.initialize(to: unw_dyn_info_t())
            info.pointee.start_ip = module.textStart
            info.pointee.end_ip = module.textEnd
            info.pointee.format = Int32(UNW_INFO_FORMAT_REMOTE_TABLE.rawValue)
            info.pointee.u.rti.segbase = header.virtualAddress &+ module.bias
            info.pointee.u.rti.table_data = header.tableVirtualAddress &+ module.bias
            // Counted in words; one table entry (two 32-bit offsets) is one word on x86-64.
            info.pointee.u.rti.table_len = header.fdeCount
            tables[key] = info
            return info
        }

        /// A snapshot taken without stopping the thread has no RBP. Code built with frame
        /// pointers needs it (CFA = RBP + 16), so look for the frame record the function
        /// pushed: the first slot at or above the frame's SP holding a saved RBP (zero or a
        /// higher stack address) followed by a return address that follows a call
        /// instruction. The unwind that uses it is then checked like any other.
        func recoverFramePointer() -> UInt64? {
            let stackEnd = stackStart &+ UInt64(stack.count)
            var address = (max(currentFrameSP, stackStart) + 7) & ~7
            let limit = min(stackEnd &- 16, address &+ 64 * 1024)
            while address <= limit {
                if let saved = readWord(address), let returnAddress = readWord(address + 8),
                   saved == 0 || (saved > address && saved < stackEnd),
                   let module = modules.module(containing: returnAddress),
                   module.followsCallInstruction(returnAddress)
                {
                    return address
                }
                address += 8
            }
            return nil
        }

        @inline(__always)
        func readWord(_ address: UInt64) -> UInt64? {
            if address >= stackStart, address &+ 8 <= stackStart &+ UInt64(stack.count) {
                return stack.loadUnaligned(fromByteOffset: Int(address - stackStart), as: UInt64.self)
            }
            return modules.module(containing: address)?.readWord(at: address)
        }
    }

    private let context: Context
    private var addressSpace: unw_addr_space_t?
    private var accessors = unw_accessors_t()
    private let cursor = UnsafeMutablePointer<unw_cursor_t>.allocate(capacity: 1)

    public var maxFrames = 256

    public init(modules: ProcessModules) {
        context = Context(modules: modules)
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
        for table in context.tables.values { table.deallocate() }
        context.tables = [:]
        if let addressSpace { sa_unw_flush_cache(addressSpace) }
    }

    public func unwind(_ snapshot: ThreadSnapshot) -> UnwoundStack {
        guard let addressSpace else { return UnwoundStack(frames: [], end: .noUnwindInfo) }
        return snapshot.stack.withUnsafeBytes { stackBytes in
            context.registers = snapshot.registers
            context.stackStart = snapshot.stackStart
            context.stack = stackBytes
            context.lastError = nil
            defer { context.stack = UnsafeRawBufferPointer(start: nil, count: 0) }
            let arg = Unmanaged.passUnretained(context).toOpaque()
            var frames: [UnwoundFrame] = []
            guard sa_unw_init_remote(cursor, addressSpace, arg) == 0 else {
                return UnwoundStack(frames: [frameFromRegisters(snapshot.registers)], end: .badFrame)
            }
            var end = UnwindEnd.truncatedAtLimit
            while frames.count < maxFrames {
                var ip: unw_word_t = 0
                var sp: unw_word_t = 0
                _ = sa_unw_get_ip(cursor, &ip)
                _ = sa_unw_get_sp(cursor, &sp)
                if ip == 0 {
                    end = .complete
                    break
                }
                let signal = sa_unw_is_signal_frame(cursor) > 0
                if let last = frames.last, sp < last.stackPointer || (sp == last.stackPointer && ip == last.address) {
                    end = .badFrame
                    break
                }
                frames.append(UnwoundFrame(address: ip, stackPointer: sp, isSignalFrame: signal))
                context.currentFrameSP = sp
                let step = sa_unw_step(cursor)
                if step == 0 {
                    end = .complete
                    break
                }
                if step < 0 {
                    end = context.lastError ?? SnapshotUnwinder.end(forError: -step)
                    break
                }
            }
            return UnwoundStack(frames: frames, end: end)
        }
    }

    private func frameFromRegisters(_ registers: RegisterFile) -> UnwoundFrame {
        UnwoundFrame(address: registers.pc, stackPointer: registers.sp, isSignalFrame: false)
    }

    private static func end(forError code: Int32) -> UnwindEnd {
        switch UInt32(code) {
        case UNW_EBADREG.rawValue: return .missingRegister
        case UNW_ENOINFO.rawValue: return .noUnwindInfo
        default: return .badFrame
        }
    }

    // MARK: libunwind accessors (C callbacks: no captures, state through `arg`)

    private static let findProcInfo: @convention(c) (
        unw_addr_space_t?, unw_word_t, UnsafeMutablePointer<unw_proc_info_t>?, Int32, UnsafeMutableRawPointer?
    ) -> Int32 = { space, ip, info, needInfo, arg in
        guard let arg else { return -Int32(UNW_EINVAL.rawValue) }
        let context = Unmanaged<Context>.fromOpaque(arg).takeUnretainedValue()
        guard let module = context.modules.module(containing: ip), let table = context.table(for: module),
              ip >= table.pointee.start_ip, ip < table.pointee.end_ip
        else { return -Int32(UNW_ENOINFO.rawValue) }
        return sa_unw_search_table(space, ip, table, info, needInfo, arg)
    }

    private static let accessMemory: @convention(c) (
        unw_addr_space_t?, unw_word_t, UnsafeMutablePointer<unw_word_t>?, Int32, UnsafeMutableRawPointer?
    ) -> Int32 = { _, address, value, write, arg in
        guard write == 0, let arg, let value else { return -Int32(UNW_EINVAL.rawValue) }
        let context = Unmanaged<Context>.fromOpaque(arg).takeUnretainedValue()
        if let word = context.readWord(address) {
            value.pointee = word
            return 0
        }
        // An address just below the copy is a corrupt frame; above it, the copy was too short.
        if address >= context.stackStart &+ UInt64(context.stack.count),
           context.modules.module(containing: address) == nil
        {
            context.lastError = .outsideCopiedStack
        }
        return -Int32(UNW_EINVAL.rawValue)
    }

    private static let accessRegister: @convention(c) (
        unw_addr_space_t?, unw_regnum_t, UnsafeMutablePointer<unw_word_t>?, Int32, UnsafeMutableRawPointer?
    ) -> Int32 = { _, register, value, write, arg in
        guard write == 0, let arg, let value else { return -Int32(UNW_EINVAL.rawValue) }
        let context = Unmanaged<Context>.fromOpaque(arg).takeUnretainedValue()
        if Int(register) == RegisterFile.rbp, context.registers[RegisterFile.rbp] == nil,
           let recovered = context.recoverFramePointer()
        {
            context.registers[RegisterFile.rbp] = recovered
        }
        guard let word = context.registers[Int(register)] else {
            context.lastError = .missingRegister
            return -Int32(UNW_EBADREG.rawValue)
        }
        value.pointee = word
        return 0
    }
}
