import CLibelf
import Synchronization

/// Function symbols of one ELF file. `.symtab` is preferred; a stripped file has only
/// `.dynsym`, which leaves out every static function: an address past the end of the symbol
/// below it is not named after that symbol (see `lookup`).
///
/// Nothing is copied up front. The first lookups scan the symbol sections in place, as
/// eu-stack does: a one-shot dump asks a handful of addresses, and sorting a large C++
/// program's table (Node.js: 180 000 symbols) would be most of its time. A table asked more
/// often (a watch) is sorted once, without names, for binary search.
// Unchecked: `sources` (pointers into libelf's data) is set in init and only read; all that changes is in `state`, a Mutex.
public final class ElfSymbolTable: @unchecked Sendable {
    public struct Match: Equatable, Sendable {
        public var name: String
        public var start: UInt64
        public var offset: UInt64
        /// True when the address may belong to a symbol we cannot see.
        public var approximate: Bool
    }

    /// One function, without its name (7 MB of names in Node.js, as Swift strings tens of
    /// megabytes): the name stays in the string table and is read on lookup.
    private struct Entry {
        var start: UInt64
        var size: UInt32
        var nameOffset: UInt32
        var order: UInt32
        var source: UInt16
    }

    /// One symbol section, read in place: the ELF files are kept open by the images that own
    /// this table.
    private struct Source {
        /// Unowned: an image keeps its own table (`ElfImage.symbol(forVirtualAddress:)`).
        unowned var owner: ElfImage
        var elf: OpaquePointer
        var data: UnsafeMutablePointer<Elf_Data>
        /// Raw native 64-bit records when libelf hands them over as in the file.
        var records: UnsafeRawBufferPointer?
        var count: Int
        var stringSection: Int
    }

    private let sources: [Source]
    public let hasSymtab: Bool
    /// Lookups answered by scanning before the sorted table is built.
    static let scansBeforeSorting = 16
    /// The sorted table, 17 bytes a function: `keys` packs address and scan position (so
    /// aliases stay in file order), the other arrays are indexed by scan position.
    private struct Sorted {
        var keys: [UInt64] = []
        var sizes: [UInt32] = []
        var names: [UInt32] = []
        var sources: [UInt8] = []
    }
    private struct State {
        var scans = 0
        var sorted: Sorted?
        /// Addresses beyond 44 bits, more than 2^20 functions or 255 sections: never sorted,
        /// always scanned (no real program).
        var unsortable = false
    }
    private let state = Mutex(State())

    /// Function symbols held, aliases included.
    public var count: Int {
        var count = 0
        forEachFunction { _ in count += 1 }
        return count
    }

    /// Calls `body` for every defined symbol of `.symtab` and `.dynsym` with its name; stops
    /// when `body` returns false. For callers after one name (the table keeps names unread).
    /// `including` is asked before the name is read, and `preferringSymtab` skips `.dynsym` where a
    /// `.symtab` (a superset) is present: each name read, each entry walked, makes its page of
    /// the file resident — node's tables are 4.4 MB of entries and 12.8 MB of names, and
    /// reading all of them for V8's constants cost a Node watch 12 MB of VmHWM.
    package static func forEachSymbol(
        in elf: OpaquePointer, including: (GElf_Sym) -> Bool = { _ in true }, preferringSymtab: Bool = false,
        _ body: (_ symbol: GElf_Sym, _ name: UnsafePointer<CChar>, _ fromSymtab: Bool) -> Bool
    ) {
        var hasSymtab = false
        if preferringSymtab {
            forEachSymbolSection(in: elf) { sh, _, _ in
                if sh.sh_type == UInt32(SHT_SYMTAB) { hasSymtab = true }
                return true
            }
        }
        forEachSymbolSection(in: elf) { sh, data, count in
            if hasSymtab && sh.sh_type == UInt32(SHT_DYNSYM) { return true }
            for index in 0..<count {
                var sym = GElf_Sym()
                // Undefined symbols (imports) have no address in this file.
                guard gelf_getsym(data, Int32(index), &sym) != nil, sym.st_shndx != 0, including(sym),
                    let name = elf_strptr(elf, Int(sh.sh_link), Int(sym.st_name))
                else { continue }
                if !body(sym, name, sh.sh_type == UInt32(SHT_SYMTAB)) { return false }
            }
            return true
        }
    }

    /// Calls `body` for each `.symtab` and `.dynsym` section with its data and its entry count;
    /// stops when `body` returns false.
    private static func forEachSymbolSection(
        in elf: OpaquePointer, _ body: (_ header: GElf_Shdr, _ data: UnsafeMutablePointer<Elf_Data>, _ count: Int) -> Bool
    ) {
        var section: OpaquePointer? = nil
        while let scn = elf_nextscn(elf, section) {
            section = scn
            var sh = GElf_Shdr()
            guard gelf_getshdr(scn, &sh) != nil,
                sh.sh_type == UInt32(SHT_SYMTAB) || sh.sh_type == UInt32(SHT_DYNSYM),
                sh.sh_entsize > 0, let data = elf_getdata(scn, nil)
            else { continue }
            // A corrupt sh_size must not make a billion-step loop: libelf's data is bounded
            // by the file.
            let count = Int(min(min(sh.sh_size, UInt64(data.pointee.d_size)) / sh.sh_entsize, UInt64(Int32.max)))
            if !body(sh, data, count) { return }
        }
    }

    /// Merges the tables of several files with the same addresses: a module and its debug
    /// file, or its MiniDebugInfo (which holds only what `.dynsym` lacks). The files must
    /// outlive the table (names are read from them on lookup).
    init(images: [ElfImage]) {
        var sources: [Source] = []
        var sawSymtab = false
        // Both tables are read: .symtab has the statics, .dynsym may add names .symtab lost.
        for image in images {
            guard let elf = image.elf else { continue }
            ElfSymbolTable.forEachSymbolSection(in: elf) { sh, data, count in
                // Sources are numbered in 16 bits.
                guard sources.count < Int(UInt16.max) else { return false }
                // Entry 0 is the null symbol.
                if sh.sh_type == UInt32(SHT_SYMTAB) && count > 1 { sawSymtab = true }
                var records: UnsafeRawBufferPointer?
                if let raw = data.pointee.d_buf, gelf_getclass(elf) == ELFCLASS64, sh.sh_entsize == 24,
                    data.pointee.d_type == ELF_T_SYM
                {
                    records = UnsafeRawBufferPointer(start: raw, count: count * 24)
                }
                sources.append(
                    Source(owner: image, elf: elf, data: data, records: records, count: count, stringSection: Int(sh.sh_link)))
                return true
            }
        }
        self.sources = sources
        hasSymtab = sawSymtab
    }

    /// Calls `body` with every defined function symbol (STT_FUNC, STT_GNU_IFUNC) of every
    /// source, in file order.
    private func forEachFunction(_ body: (Entry) -> Void) {
        var order: UInt32 = 0
        for (sourceIndex, source) in sources.enumerated() {
            func add(name: UInt32, info: UInt8, section: UInt16, value: UInt64, size: UInt64) {
                // Undefined symbols (imports) have no address in this file.
                let type = info & 0x0f
                guard section != 0, type == 2 || type == 10, value != 0 else { return }
                body(
                    Entry(
                        start: value, size: UInt32(clamping: size), nameOffset: name, order: order,
                        source: UInt16(sourceIndex)))
                order &+= 1
            }
            if let bytes = source.records {
                // libelf hands native 64-bit symbols over as they are in the file: read them
                // in place rather than one gelf_getsym call (and copy) each.
                for offset in stride(from: 0, to: bytes.count, by: 24) {
                    add(
                        name: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self), info: bytes[offset + 4],
                        section: bytes.loadUnaligned(fromByteOffset: offset + 6, as: UInt16.self),
                        value: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self),
                        size: bytes.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self))
                }
                // Read again (from the page cache) only by another scan: a large program's
                // symbol sections (Node.js: 4.4 MB) need not stay in the agent's memory.
                source.owner.releasePages(bytes)
            } else {
                for index in 0..<source.count {
                    var sym = GElf_Sym()
                    guard gelf_getsym(source.data, Int32(index), &sym) != nil, sym.st_name <= UInt32.max else { continue }
                    add(name: UInt32(sym.st_name), info: sym.st_info, section: sym.st_shndx, value: sym.st_value, size: sym.st_size)
                }
            }
        }
    }

    /// Sorts the table once (nil when it cannot be packed; it is then always scanned).
    private func sortedTable(_ state: inout State) -> Sorted? {
        if let sorted = state.sorted { return sorted }
        guard !state.unsortable else { return nil }
        var table = Sorted()
        let capacity = sources.reduce(0) { $0 + $1.count }
        table.keys.reserveCapacity(capacity)
        table.sizes.reserveCapacity(capacity)
        table.names.reserveCapacity(capacity)
        table.sources.reserveCapacity(capacity)
        var packable = sources.count <= Int(UInt8.max)
        forEachFunction { entry in
            guard packable else { return }
            let index = UInt64(table.keys.count)
            guard entry.start < 1 << 44, index < 1 << 20 else {
                packable = false
                return
            }
            // Address and position in one integer: sorting plain integers is several times
            // faster than sorting structs with a closure.
            table.keys.append(entry.start << 20 | index)
            table.sizes.append(entry.size)
            table.names.append(entry.nameOffset)
            table.sources.append(UInt8(entry.source))
        }
        guard packable else {
            state.unsortable = true
            return nil
        }
        table.keys.sort()
        state.sorted = table
        return table
    }

    private func namePointer(_ entry: Entry) -> UnsafePointer<CChar>? {
        let source = sources[Int(entry.source)]
        return elf_strptr(source.elf, source.stringSection, Int(entry.nameOffset)).map { UnsafePointer($0) }
    }

    /// Lower is better: plain names, then `_x`, then `__x` (C++ `_Z` names count as plain).
    private func preference(_ entry: Entry) -> Int {
        guard let name = namePointer(entry) else { return 3 }
        guard name[0] == CChar(UInt8(ascii: "_")) else { return 0 }
        if name[1] == CChar(UInt8(ascii: "_")) { return 2 }
        return name[1] == CChar(UInt8(ascii: "Z")) ? 0 : 1
    }

    /// The function containing `address`, or nil rather than a neighbour's name.
    ///
    /// Inside a sized symbol the name is exact, even from `.dynsym` alone: functions do not
    /// overlap, so nothing unseen can sit in there. Past its end lies something the table does
    /// not name — a static function `.dynsym` leaves out, another part of the program, a
    /// `.cold` split — so there is no name (the frame keeps module + offset for later
    /// symbolication). A symbol without a size (hand-written assembly) bounds nothing: it is
    /// a guess, marked approximate, and only with the full `.symtab`, where the next symbol
    /// is at least known to be the next function.
    public func lookup(_ address: UInt64) -> Match? {
        let sorted: Sorted? = state.withLock { state in
            state.scans += 1
            return state.scans > Self.scansBeforeSorting ? sortedTable(&state) : nil
        }
        // Aliases: every function starting at the highest start at or below the address.
        var aliases: [Entry] = []
        if let table = sorted {
            let low = table.keys.countStarting(atOrBelow: address) { $0 >> 20 }
            guard low > 0 else { return nil }
            var position = low - 1
            let start = table.keys[position] >> 20
            while position >= 0 && table.keys[position] >> 20 == start {
                let index = Int(table.keys[position] & 0xfffff)
                aliases.append(
                    Entry(
                        start: start, size: table.sizes[index], nameOffset: table.names[index], order: UInt32(index),
                        source: UInt16(table.sources[index])))
                position -= 1
            }
        } else {
            var best: UInt64 = 0
            forEachFunction { entry in
                guard entry.start <= address, entry.start >= best else { return }
                if entry.start > best {
                    best = entry.start
                    aliases.removeAll(keepingCapacity: true)
                }
                aliases.append(entry)
            }
        }
        // Among aliases: sized before unsized, then the preferred name, then file order.
        func rank(_ entry: Entry) -> (Int, Int, UInt32) { (entry.size == 0 ? 1 : 0, preference(entry), entry.order) }
        guard var entry = aliases.first else { return nil }
        if aliases.count > 1 {
            var best = rank(entry)
            for candidate in aliases.dropFirst() {
                let candidateRank = rank(candidate)
                if candidateRank < best {
                    best = candidateRank
                    entry = candidate
                }
            }
        }
        let offset = address - entry.start
        if entry.size > 0 {
            guard offset < UInt64(entry.size) else { return nil }
        } else {
            guard hasSymtab else { return nil }
        }
        guard let name = namePointer(entry) else { return nil }
        return Match(name: String(cString: name), start: entry.start, offset: offset, approximate: entry.size == 0)
    }
}
