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

    private var starts: [UInt64] = []
    private var sizes: [UInt64] = []
    private var names: [String] = []
    public private(set) var hasSymtab = false

    public var count: Int { starts.count }

    /// Calls `body` for every defined symbol of `.symtab` and `.dynsym` with its name; stops
    /// when `body` returns false. The one walk over libelf's symbol sections.
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
    /// file, or its MiniDebugInfo (which holds only what `.dynsym` lacks).
    init(elfs: [OpaquePointer]) {
        var entries: [(UInt64, UInt64, String)] = []
        var sawSymtab = false
        // Both tables are read: .symtab has the statics, .dynsym may add names .symtab lost.
        for elf in elfs {
            ElfSymbolTable.forEachSymbol(in: elf) { sym, name, fromSymtab in
                if fromSymtab { sawSymtab = true }
                let type = sym.st_info & 0x0f
                // STT_FUNC and STT_GNU_IFUNC.
                if (type == 2 || type == 10) && sym.st_value != 0 {
                    entries.append((sym.st_value, sym.st_size, String(cString: name)))
                }
                return true
            }
        }
        hasSymtab = sawSymtab
        // Aliases share an address: keep one, preferring a sized, non-underscore name.
        entries.sort { a, b in
            if a.0 != b.0 { return a.0 < b.0 }
            if (a.1 == 0) != (b.1 == 0) { return a.1 != 0 }
            return ElfSymbolTable.preference(a.2) < ElfSymbolTable.preference(b.2)
        }
        starts.reserveCapacity(entries.count)
        for entry in entries where starts.last != entry.0 {
            starts.append(entry.0)
            sizes.append(entry.1)
            names.append(entry.2)
        }
    }

    private static func preference(_ name: String) -> Int {
        name.hasPrefix("__") ? 2 : (name.hasPrefix("_") && !name.hasPrefix("_Z") && !name.hasPrefix("$s") ? 1 : 0)
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
        let low = starts.countStarting(atOrBelow: address) { $0 }
        guard low > 0 else { return nil }
        let index = low - 1
        let offset = address - starts[index]
        let size = sizes[index]
        if size > 0 {
            guard offset < size else { return nil }
            return Match(name: names[index], start: starts[index], offset: offset, approximate: false)
        }
        guard hasSymtab else { return nil }
        return Match(name: names[index], start: starts[index], offset: offset, approximate: true)
    }
}
