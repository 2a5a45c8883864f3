import CLibelf

/// Function symbols of one ELF file, sorted for binary search. `.symtab` is preferred; a
/// stripped file has only `.dynsym`, which leaves out every static function: an address past
/// the end of the symbol below it is not named after that symbol (see `lookup`).
public struct ElfSymbolTable {
    public struct Match: Equatable, Sendable {
        public var name: String
        public var start: UInt64
        public var offset: UInt64
        /// True when the address may belong to a symbol we cannot see.
        public var approximate: Bool
    }

    /// One function, without its name: a large C++ program (Node.js: 180 000 symbols, 7 MB
    /// of names) would cost tens of megabytes and most of a dump's time as Swift strings,
    /// and touch every page of its string table, for the few names a stack needs. The name
    /// stays in the string table and is read on lookup.
    private struct Entry {
        var start: UInt64
        var size: UInt32
        var nameOffset: UInt32
        var order: UInt32
        var source: UInt16
    }

    /// Where names are read from: the ELF files (kept open by the images that own this
    /// table) and the string-table section of each symbol section.
    private struct NameSource {
        var elf: OpaquePointer
        var stringSection: Int
    }

    private var entries: [Entry] = []
    private var sources: [NameSource] = []
    public private(set) var hasSymtab = false

    /// Function symbols held, aliases included.
    public var count: Int { entries.count }

    /// Calls `body` for every defined symbol of `.symtab` and `.dynsym` with its name; stops
    /// when `body` returns false. For callers after one name (the table keeps names unread).
    static func forEachSymbol(
        in elf: OpaquePointer, _ body: (_ symbol: GElf_Sym, _ name: UnsafePointer<CChar>, _ fromSymtab: Bool) -> Bool
    ) {
        var section: OpaquePointer? = nil
        while let scn = elf_nextscn(elf, section) {
            section = scn
            var sh = GElf_Shdr()
            guard gelf_getshdr(scn, &sh) != nil,
                  sh.sh_type == UInt32(SHT_SYMTAB) || sh.sh_type == UInt32(SHT_DYNSYM),
                  sh.sh_entsize > 0, let data = elf_getdata(scn, nil)
            else { continue }
            let fromSymtab = sh.sh_type == UInt32(SHT_SYMTAB)
            // A corrupt sh_size must not make a billion-step loop: libelf's data is bounded
            // by the file.
            let count = min(sh.sh_size, UInt64(data.pointee.d_size)) / sh.sh_entsize
            for index in 0..<Int(min(count, UInt64(Int32.max))) {
                var sym = GElf_Sym()
                // Undefined symbols (imports) have no address in this file.
                guard gelf_getsym(data, Int32(index), &sym) != nil, sym.st_shndx != 0,
                      let name = elf_strptr(elf, Int(sh.sh_link), Int(sym.st_name))
                else { continue }
                if !body(sym, name, fromSymtab) { return }
            }
        }
    }

    /// Merges the tables of several files with the same addresses: a module and its debug
    /// file, or its MiniDebugInfo (which holds only what `.dynsym` lacks). The files must
    /// outlive the table (names are read from them on lookup).
    init(elfs: [OpaquePointer]) {
        var entries: [Entry] = []
        // Both tables are read: .symtab has the statics, .dynsym may add names .symtab lost.
        for elf in elfs {
            var section: OpaquePointer? = nil
            while let scn = elf_nextscn(elf, section) {
                section = scn
                var sh = GElf_Shdr()
                guard gelf_getshdr(scn, &sh) != nil,
                      sh.sh_type == UInt32(SHT_SYMTAB) || sh.sh_type == UInt32(SHT_DYNSYM),
                      sh.sh_entsize > 0, let data = elf_getdata(scn, nil), sources.count < Int(UInt16.max)
                else { continue }
                let fromSymtab = sh.sh_type == UInt32(SHT_SYMTAB)
                let source = UInt16(sources.count)
                sources.append(NameSource(elf: elf, stringSection: Int(sh.sh_link)))
                // A corrupt sh_size must not make a billion-step loop: libelf's data is
                // bounded by the file.
                let count = min(sh.sh_size, UInt64(data.pointee.d_size)) / sh.sh_entsize
                entries.reserveCapacity(entries.count + Int(min(count, 1 << 24)))
                let total = Int(min(count, UInt64(Int32.max)))
                func add(name: UInt32, info: UInt8, section: UInt16, value: UInt64, size: UInt64) {
                    // Undefined symbols (imports) have no address in this file.
                    guard section != 0 else { return }
                    if fromSymtab { hasSymtab = true }
                    // STT_FUNC and STT_GNU_IFUNC.
                    let type = info & 0x0f
                    guard type == 2 || type == 10, value != 0 else { return }
                    entries.append(
                        Entry(
                            start: value, size: UInt32(clamping: size), nameOffset: name,
                            order: UInt32(truncatingIfNeeded: entries.count), source: source))
                }
                if let raw = data.pointee.d_buf, gelf_getclass(elf) == ELFCLASS64, sh.sh_entsize == 24,
                   data.pointee.d_type == ELF_T_SYM
                {
                    // libelf hands native 64-bit symbols over as they are in the file: read
                    // them in place rather than one gelf_getsym call (and copy) each.
                    let bytes = UnsafeRawBufferPointer(start: raw, count: total * 24)
                    for offset in stride(from: 0, to: bytes.count, by: 24) {
                        add(
                            name: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self),
                            info: bytes[offset + 4],
                            section: bytes.loadUnaligned(fromByteOffset: offset + 6, as: UInt16.self),
                            value: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self),
                            size: bytes.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self))
                    }
                } else {
                    for index in 0..<total {
                        var sym = GElf_Sym()
                        guard gelf_getsym(data, Int32(index), &sym) != nil, sym.st_name <= UInt32.max else { continue }
                        add(
                            name: UInt32(sym.st_name), info: sym.st_info, section: sym.st_shndx, value: sym.st_value,
                            size: sym.st_size)
                    }
                }
            }
        }
        // Aliases (and the copy of each export in both .dynsym and .symtab) share an
        // address; the name among them is chosen on lookup, so building the table reads no
        // name at all.
        self.entries = Self.sortedByAddress(entries)
    }

    /// By address, then file order. Where addresses fit in 44 bits and there are fewer than
    /// 2^20 symbols (every real program), the two are packed into one integer: sorting plain
    /// integers is several times faster than sorting structs with a closure, and a large C++
    /// program's table is most of a dump's own time.
    private static func sortedByAddress(_ entries: [Entry]) -> [Entry] {
        let maxStart = entries.reduce(0) { max($0, $1.start) }
        guard maxStart < 1 << 44, entries.count < 1 << 20 else {
            return entries.sorted { $0.start != $1.start ? $0.start < $1.start : $0.order < $1.order }
        }
        var keys = entries.indices.map { UInt64(entries[$0].start) << 20 | UInt64($0) }
        keys.sort()
        return keys.map { entries[Int($0 & 0xfffff)] }
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
        let low = entries.countStarting(atOrBelow: address) { $0.start }
        guard low > 0 else { return nil }
        // Among aliases: sized before unsized, then the preferred name, then file order.
        func rank(_ entry: Entry) -> (Int, Int, UInt32) { (entry.size == 0 ? 1 : 0, preference(entry), entry.order) }
        var entry = entries[low - 1]
        var index = low - 2
        if index >= 0 && entries[index].start == entry.start {
            var best = rank(entry)
            while index >= 0 && entries[index].start == entry.start {
                let candidate = rank(entries[index])
                if candidate < best {
                    best = candidate
                    entry = entries[index]
                }
                index -= 1
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
