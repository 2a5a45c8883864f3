import CLibunwind
import StallSymbols

/// State the libunwind C callbacks reach through their `arg` pointer, and the reads the
/// unwinder's own checks share with them: every read is served from the copied stack or a
/// module's file, never from the live target.
final class UnwindContext {
    var modules: ProcessModules
    var registers = RegisterFile()
    var stackStart: UInt64 = 0
    var stack = UnsafeRawBufferPointer(start: nil, count: 0)
    var lastError: UnwindEnd?
    /// Words of `stack` (index from `stackStart`) whose value while the thread was stopped is
    /// unknown (`ThreadSnapshot.changedWords`), and whether the unwind needed one.
    var changedWords: Set<Int> = []
    var neededChangedWord = false
    /// Set when libunwind asked for a register the snapshot does not have.
    var missingRegister: Int?
    /// Per-module search tables handed to libunwind; kept alive while the modules are.
    var tables: [ObjectIdentifier: UnsafeMutablePointer<unw_dyn_info_t>] = [:]
    /// The address space the tables belong to, for CFI look-ups outside a step.
    var addressSpace: unw_addr_space_t?

    init(modules: ProcessModules) { self.modules = modules }

    deinit { dropTables() }

    /// Function starts by pc (0: no CFI), as the frame-record search asks for the same few
    /// return addresses over and over.
    private var procedureStarts: [UInt64: UInt64] = [:]
    /// The frame-record search's answer per (pc, sp, stack bytes it read): a thread blocked in
    /// one call is sampled again and again with the same stack.
    var recoveredRecords: [FramePointerRecovery.Key: UInt64?] = [:]

    func dropTables() {
        for table in tables.values { table.deallocate() }
        tables = [:]
        procedureStarts = [:]
        recoveredRecords = [:]
    }

    var stackEnd: UInt64 { stackStart &+ UInt64(stack.count) }

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

    /// The start of the function whose CFI covers `pc` (the FDE's first address), or nil when
    /// no CFI covers it: JIT code, hand-written code without CFI, a module without
    /// `.eh_frame_hdr`.
    func procedureStart(covering pc: UInt64) -> UInt64? {
        if let known = procedureStarts[pc] { return known == 0 ? nil : known }
        let start = lookUpProcedureStart(covering: pc)
        if procedureStarts.count > 50_000 { procedureStarts.removeAll(keepingCapacity: true) }
        procedureStarts[pc] = start ?? 0
        return start
    }

    private func lookUpProcedureStart(covering pc: UInt64) -> UInt64? {
        guard let addressSpace, let module = modules.module(containing: pc), let table = table(for: module),
            pc >= table.pointee.start_ip, pc < table.pointee.end_ip
        else { return nil }
        var info = unw_proc_info_t()
        let arg = Unmanaged.passUnretained(self).toOpaque()
        guard sa_unw_search_table(addressSpace, pc, table, &info, 0, arg) == 0,
            pc >= info.start_ip, pc < info.end_ip
        else { return nil }
        return info.start_ip
    }

    /// True for addresses in executable memory: a module's code, the vDSO or a JIT's
    /// anonymous executable mapping. Anything else on the stack where a return address
    /// should be is data.
    func isExecutable(_ address: UInt64) -> Bool {
        modules.mapping(containing: address)?.executable ?? false
    }

    /// What a return address must look like: in executable memory and, where the code can be
    /// read from its file, right after a call instruction. JIT code cannot be read without
    /// touching the target, so there the mapping alone decides.
    func isPlausibleReturnAddress(_ address: UInt64) -> Bool {
        guard let mapping = modules.mapping(containing: address), mapping.executable else { return false }
        guard let module = modules.module(containing: address), module.image != nil else {
            return !mapping.isFileBacked
        }
        return module.followsCallInstruction(address)
    }

    func isInStack(_ address: UInt64) -> Bool {
        address >= stackStart && address < stackEnd && stackEnd - address >= 8
    }

    @inline(__always)
    func readWord(_ address: UInt64) -> UInt64? {
        // Written so a wild address near 2^64 cannot wrap past the bounds check.
        if address >= stackStart, address - stackStart <= UInt64(stack.count), UInt64(stack.count) - (address - stackStart) >= 8 {
            let offset = Int(address - stackStart)
            if !changedWords.isEmpty,
                changedWords.contains(offset >> 3) || (offset & 7 != 0 && changedWords.contains((offset >> 3) + 1))
            {
                neededChangedWord = true
                return nil
            }
            return stack.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        }
        return modules.module(containing: address)?.readWord(at: address)
    }
}
