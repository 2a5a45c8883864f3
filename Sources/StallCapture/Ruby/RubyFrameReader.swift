import StallSymbols
/// Reads a Ruby process's calls from outside, as rbspy does (docs/architecture.md, "Ruby
/// frames"): `ruby_current_vm_ptr` is exported by libruby (or a static ruby); the VM's main
/// thread's execution context holds its control frames, one per Ruby call, from the innermost
/// (`cfp`) to the end of its VM stack. A Ruby frame names its iseq (label, script) and, through
/// its saved pc and the iseq's line table, the line executing; a C method's frame names its
/// method entry, whose ID is looked up in Ruby's global symbol table. Ruby 3.1's layout
/// (`RubyLayout`); the main thread only (the thread a watch follows).
///
/// Read with the target running, as the PHP reader: until two reads in a row agree on every
/// frame but the innermost (at most four reads; the last is kept: `SettledChain`); every
/// string, array and line is bounded and checked, and a chain that never settles gives no Ruby
/// frames and a note.
public final class RubyFrameReader {
    static let maxDepth = 1024
    static let maxStringLength = 4096

    /// The module defining `ruby_current_vm_ptr` (libruby-3.1.so.3.1, or a static ruby).
    public let modulePath: String
    /// "3.1".
    public let version: String
    /// Why the frames of this Ruby are not read; nil when they are.
    public let unsupportedNote: String?
    private let layout: RubyLayout?
    private let memory: TargetReader
    private let vmPointer: UInt64
    /// The module's `.data` as mapped: the global symbol table (`ruby_global_symbols`, not
    /// exported) is found there by its shape, on the first C method to name.
    private let dataRange: Range<UInt64>?
    private var symbolIDs = LookedForOnce<UInt64>()
    private var iseqs: [UInt64: (header: [UInt8], name: String, file: String?)] = [:]
    private var methodNames: [UInt64: String] = [:]

    /// The reader for `modules`' Ruby, nil for a process that runs none.
    public init?(pid: Int32, modules: ProcessModules) {
        var found: (module: LoadedModule, image: ElfImage, vm: UInt64)?
        for module in modules.modules where module.name.hasPrefix("libruby") || module.name.hasPrefix("ruby") {
            guard let image = module.image, let vm = image.address(ofSymbol: "ruby_current_vm_ptr") else { continue }
            found = (module, image, vm)
            break
        }
        guard let (module, image, vm) = found else { return nil }
        modulePath = module.path
        vmPointer = module.bias &+ vm
        memory = TargetReader(pid: pid)
        // `ruby_version` ("3.1.2") is exported by every build; the file name is the fallback.
        var named = ""
        if let range = image.range(ofSymbol: "ruby_version"), range.count <= 32,
            let bytes = image.readBytes(atVirtualAddress: range.lowerBound, count: range.count)
        {
            let text = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            named = text.split(separator: ".").prefix(2).joined(separator: ".")
        }
        if named.isEmpty {
            named = module.versionInName.split(separator: ".").prefix(2).joined(separator: ".")
        }
        version = named
        if let data = image.section(named: ".data"), let base = data.baseAddress, let file = image.fileBytes.baseAddress,
            let address = image.virtualAddress(forFileOffset: UInt64(base - file))
        {
            dataRange = (module.bias &+ address)..<(module.bias &+ address &+ UInt64(data.count))
        } else {
            dataRange = nil
        }
        if version == "3.1" {
            layout = .ruby31
            unsupportedNote = nil
        } else {
            layout = nil
            unsupportedNote = "Ruby \(version.isEmpty ? "of unknown version" : version) is not read (3.1 is): native frames only"
        }
    }

    /// The calls of the process's main Ruby thread, innermost first, grouped by `rb_vm_exec`
    /// activation; nil when it runs no Ruby now (still booting, or exiting).
    public func read() -> RubyStack? {
        guard let layout else { return unsupportedNote.map { RubyStack(activations: [], note: $0) } }
        let same = { (a: Call, b: Call) in a.controlFrame == b.controlFrame && a.iseq == b.iseq && a.method == b.method }
        switch SettledChain.read({ chain(layout) }, same: same) {
        case .settled(let calls): return stack(calls, layout)
        case .none: return nil
        case .unsettled: return RubyStack(activations: [], note: "Ruby's call chain changed on every read: Ruby frames left out")
        }
    }

    private struct Call {
        var controlFrame: UInt64
        var pc: UInt64
        var iseq: UInt64
        var flags: UInt64
        /// A C method's frame: its method entry (`ep[-2]`); 0 otherwise.
        var method: UInt64
    }

    /// The raw chain, innermost first: pointers only.
    private func chain(_ layout: RubyLayout) -> [Call]? {
        guard let vm = memory.word(vmPointer), vm != 0, let thread = memory.word(vm &+ layout.vmMainThread), thread != 0,
            let context = memory.word(thread &+ layout.threadExecutionContext), context != 0,
            let header = memory.bytes(context, Int(layout.contextFrame) + 8)
        else { return nil }
        let stackStart = TargetReader.word(header, layout.contextStack)
        let words = TargetReader.word(header, layout.contextStackSize)
        let innermost = TargetReader.word(header, layout.contextFrame)
        let size = UInt64(layout.frameSize)
        guard words > 0, words < 1 << 28, stackStart & 7 == 0 else { return nil }
        let end = stackStart &+ words &* 8
        guard innermost >= stackStart, innermost < end, (end - innermost) % size == 0 else { return nil }
        let count = Int(min((end - innermost) / size, UInt64(Self.maxDepth)))
        guard count > 0, let frames = memory.bytes(innermost, count * layout.frameSize) else { return nil }
        var calls: [Call] = []
        calls.reserveCapacity(count)
        for index in 0..<count {
            let offset = index * layout.frameSize
            let environment = TargetReader.word(frames, offset + layout.frameEnvironment)
            guard environment & 7 == 0, let flags = memory.word(environment) else { return nil }
            var method: UInt64 = 0
            if flags & RubyLayout.flagCFrame != 0, flags & RubyLayout.frameMagicMask == RubyLayout.magicCFunction {
                method = memory.word(environment &- 16) ?? 0
            }
            calls.append(
                Call(
                    controlFrame: innermost &+ UInt64(offset), pc: TargetReader.word(frames, offset + layout.framePC),
                    iseq: TargetReader.word(frames, offset + layout.frameIseq), flags: flags, method: method))
        }
        return calls
    }

    private func stack(_ calls: [Call], _ layout: RubyLayout) -> RubyStack {
        var activations: [[RubyFrame]] = [[]]
        var note: String?
        for call in calls {
            let magic = call.flags & RubyLayout.frameMagicMask
            if call.flags & RubyLayout.flagCFrame != 0 {
                // A C method (`sleep`); a C block (an ifunc) has no name of its own.
                if magic == RubyLayout.magicCFunction {
                    activations[activations.count - 1].append(
                        RubyFrame(
                            name: methodName(call.method, layout) ?? "(C method)", file: nil, line: nil, code: call.method,
                            controlFrame: call.controlFrame))
                }
            } else if magic != RubyLayout.magicDummy, call.iseq != 0, call.pc != 0 {
                if let described = describe(call.iseq, layout) {
                    activations[activations.count - 1].append(
                        RubyFrame(
                            name: described.name, file: described.file, line: line(described.header, pc: call.pc, layout),
                            code: call.iseq, controlFrame: call.controlFrame))
                } else {
                    note = note ?? "a Ruby frame's code at 0x\(String(call.iseq, radix: 16)) was unreadable; frame left out"
                }
            }
            // The frame returns to C: the calls further out run in an outer activation.
            if call.flags & RubyLayout.flagFinish != 0 { activations.append([]) }
        }
        while activations.last?.isEmpty == true { activations.removeLast() }
        return RubyStack(activations: activations, note: note)
    }

    /// An iseq's label and script. Its body's header is read every time (a collected iseq's
    /// address can be reused); its strings only when the header changed.
    private func describe(_ iseq: UInt64, _ layout: RubyLayout) -> (name: String, file: String?, header: [UInt8])? {
        guard let body = memory.word(iseq &+ layout.iseqBody), body != 0,
            let header = memory.bytes(body, layout.bodyHeaderSize)
        else { return nil }
        if let known = iseqs[iseq], known.header == header { return (known.name, known.file, header) }
        guard let name = string(TargetReader.word(header, layout.bodyLabel)) else { return nil }
        // The path object is the path, or [path, realpath].
        var path = TargetReader.word(header, layout.bodyPath)
        if objectType(path) == RubyLayout.typeArray { path = arrayEntry(path, 0) ?? 0 }
        let file = string(path)
        if iseqs.count > 50_000 { iseqs.removeAll(keepingCapacity: true) }
        iseqs[iseq] = (header, name, file)
        return (name, file, header)
    }

    /// The line of the instruction before `pc` (a saved pc points past the call being made),
    /// from the iseq's line table: its entries' starts are a succinct bit vector whose rank
    /// is the entry's number (iseq.c, `succ_index_lookup`).
    private func line(_ header: [UInt8], pc: UInt64, _ layout: RubyLayout) -> Int? {
        let encoded = TargetReader.word(header, layout.bodyEncoded)
        let instructions = UInt64(UInt32(bitPattern: TargetReader.int32(header, 4)))
        guard pc >= encoded, (pc - encoded) % 8 == 0 else { return nil }
        var position = (pc - encoded) / 8
        guard position <= instructions else { return nil }
        if position > 0 { position -= 1 }
        let entries = TargetReader.word(header, layout.bodyLineTable)
        let size = UInt64(UInt32(bitPattern: TargetReader.int32(header, UInt64(layout.bodyLineTableSize))))
        guard size > 0, size < 1 << 24 else { return nil }
        var index: UInt64 = 0
        if size > 1 {
            guard let rank = rank(TargetReader.word(header, layout.bodyLineIndex), position), rank >= 1 else { return nil }
            index = rank - 1
        }
        guard index < size, let bytes = memory.bytes(entries &+ index &* layout.lineEntrySize, 4) else { return nil }
        let value = Int(TargetReader.int32(bytes, 0))
        return value > 0 ? value : nil
    }

    /// `succ_index_lookup`: the number of entries starting at or before `position`. The first
    /// 54 positions keep their ranks directly (9 of 7 bits per word); the rest are in blocks of
    /// 512 bits with a rank, 7 small ranks of 9 bits and the bits.
    private func rank(_ table: UInt64, _ position: UInt64) -> UInt64? {
        guard table != 0 else { return nil }
        let immediate: UInt64 = 54
        if position < immediate {
            guard let word = memory.word(table &+ 8 * (position / 9)) else { return nil }
            return (word >> ((position % 9) * 7)) & 0x7f
        }
        let bit = position - immediate
        guard let block = memory.bytes(table &+ 48 &+ (bit / 512) &* 80, 80) else { return nil }
        let inBlock = bit % 512
        let small = Int(inBlock / 64)
        let smallRanks = TargetReader.word(block, 8)
        let smallRank = small == 0 ? 0 : (smallRanks >> (UInt64(small - 1) * 9)) & 0x1ff
        let bits = TargetReader.word(block, 16 + 8 * small) << (63 - inBlock % 64)
        return UInt64(UInt32(bitPattern: TargetReader.int32(block, 0))) + smallRank + UInt64(bits.nonzeroBitCount)
    }

    /// A C method's name: its entry's `called_id` in the global symbol table.
    private func methodName(_ entry: UInt64, _ layout: RubyLayout) -> String? {
        guard entry != 0, entry & 7 == 0, let flags = memory.word(entry), flags & RubyLayout.typeMask == RubyLayout.typeIMemo,
            (flags >> 12) & 0xf == RubyLayout.imemoMethodEntry, let id = memory.word(entry &+ layout.methodCalledID)
        else { return nil }
        if let known = methodNames[id] { return known }
        guard let ids = symbolTable() else { return nil }
        let serial = id > layout.lastOperatorID ? id >> layout.idScopeShift : id
        guard let page = arrayEntry(ids, serial / RubyLayout.idEntryUnit),
            let text = arrayEntry(page, (serial % RubyLayout.idEntryUnit) * 2).flatMap(string)
        else { return nil }
        if methodNames.count > 50_000 { methodNames.removeAll(keepingCapacity: true) }
        methodNames[id] = text
        return text
    }

    /// `ruby_global_symbols.ids`, found in the module's `.data` by its shape: `{ last_id (a
    /// 32-bit serial), str_sym (a pointer), ids (an Array), dsymbol_fstr_hash (a Hash) }`.
    /// Looked for once.
    private func symbolTable() -> UInt64? {
        symbolIDs.get { findSymbolTable() }
    }

    private func findSymbolTable() -> UInt64? {
        var result: UInt64?
        if let range = dataRange, range.count <= 1 << 20, let data = memory.bytes(range.lowerBound, range.count) {
            var offset = 0
            while offset + 32 <= data.count, result == nil {
                defer { offset += 8 }
                let last = TargetReader.word(data, offset)
                let table = TargetReader.word(data, offset + 8)
                let ids = TargetReader.word(data, offset + 16)
                let hash = TargetReader.word(data, offset + 24)
                guard last > 0, last < 1 << 32, table != 0, table & 7 == 0, ids != 0, hash != 0 else { continue }
                if objectType(ids) == RubyLayout.typeArray, objectType(hash) == RubyLayout.typeHash { result = ids }
            }
        }
        return result
    }

    /// An object's type (its flags' low bits), nil for an immediate or an unreadable object.
    private func objectType(_ value: UInt64) -> UInt64? {
        guard value != 0, value & 7 == 0, let flags = memory.word(value) else { return nil }
        return flags & RubyLayout.typeMask
    }

    /// An Array's element, nil past its length.
    private func arrayEntry(_ array: UInt64, _ index: UInt64) -> UInt64? {
        guard array != 0, array & 7 == 0, let header = memory.bytes(array, 40) else { return nil }
        let flags = TargetReader.word(header, 0)
        guard flags & RubyLayout.typeMask == RubyLayout.typeArray else { return nil }
        if flags & RubyLayout.userFlag1 != 0 {
            let length = (flags >> RubyLayout.arrayEmbedShift) & 3
            return index < length ? TargetReader.word(header, 16 + 8 * Int(index)) : nil
        }
        let length = TargetReader.word(header, 16)
        guard index < length else { return nil }
        return memory.word(TargetReader.word(header, 32) &+ 8 &* index)
    }

    /// A String's text (embedded, or length and pointer), nil past `maxStringLength`.
    private func string(_ value: UInt64) -> String? {
        guard value != 0, value & 7 == 0, let header = memory.bytes(value, 40) else { return nil }
        let flags = TargetReader.word(header, 0)
        guard flags & RubyLayout.typeMask == RubyLayout.typeString else { return nil }
        if flags & RubyLayout.userFlag1 == 0 {
            let length = Int((flags >> RubyLayout.stringEmbedShift) & 0x1f)
            guard length <= 24 else { return nil }
            return String(decoding: header[16..<(16 + length)], as: UTF8.self)
        }
        let length = TargetReader.word(header, 16)
        guard length <= UInt64(Self.maxStringLength) else { return nil }
        if length == 0 { return "" }
        return memory.bytes(TargetReader.word(header, 24), Int(length)).map { String(decoding: $0, as: UTF8.self) }
    }
}
