import Synchronization

/// Everything known about the names in one module: its own symbol tables, its debug file's
/// (or, failing that, its MiniDebugInfo's) `.symtab`, and DWARF for lines and inlines. Each
/// part is read on first use and kept, so a module costs nothing until a frame lands in it.
public final class ModuleSymbols: Sendable {
    public let image: ElfImage
    public let debugImage: ElfImage?
    private struct Loaded {
        var table: ElfSymbolTable?
        var miniDebugInfo: ElfImage??
        var dwarf: DwarfSourceInfo??
    }
    private let state = Mutex(Loaded())

    init(image: ElfImage, debugImage: ElfImage?) {
        self.image = image
        self.debugImage = debugImage
    }

    /// True when names come from a full symbol table (the module's, its debug file's or its
    /// MiniDebugInfo's) rather than `.dynsym` alone.
    public var hasFullSymbols: Bool { state.withLock { table(&$0).hasSymtab } }

    /// Where the source lines come from, for tests and `--verbose` output.
    public var hasSourceLines: Bool { state.withLock { dwarf(&$0) != nil } }

    /// The function's name from the symbol tables alone: no DWARF is loaded (libc's line
    /// tables alone cost ~29 MB), for callers that only match names.
    public func functionName(_ vaddr: UInt64) -> String? {
        state.withLock { loaded in table(&loaded).lookup(vaddr).map { Demangler.demangle($0.name) } }
    }

    /// `functionName` and the address's offset from the symbol: a call site, the same in every
    /// process of a build (fingerprints tell two stalls in one function apart by it).
    public func functionSymbol(_ vaddr: UInt64) -> (name: String, offset: UInt64)? {
        state.withLock { loaded in table(&loaded).lookup(vaddr).map { (Demangler.demangle($0.name), $0.offset) } }
    }

    /// `lookup` without source lines or inlines: the DWARF is read only when the symbol tables
    /// have no name for the address (a module stripped of symbols but not of DWARF), so the
    /// name is always the one `lookup` gives. Inflating libc6-dbg's DWARF cost a wrapped
    /// build's `make` ~25 ms of agent CPU the first time it was seen waiting, for names only.
    public func lookupName(_ vaddr: UInt64) -> SymbolLookup {
        let named: SymbolLookup? = state.withLock { loaded in
            guard let match = table(&loaded).lookup(vaddr) else { return nil }
            return SymbolLookup(function: Demangler.demangle(match.name), offset: match.offset, approximate: match.approximate)
        }
        if let named { return named }
        var full = lookup(vaddr)
        full.file = nil
        full.line = nil
        full.inlined = []
        return full
    }

    public func lookup(_ vaddr: UInt64) -> SymbolLookup {
        state.withLock { loaded in
            let match = table(&loaded).lookup(vaddr)
            var result = SymbolLookup(
                function: match.map { Demangler.demangle($0.name) }, offset: match?.offset ?? 0,
                approximate: match?.approximate ?? false)
            if let source = dwarf(&loaded)?.locate(vaddr) {
                result.file = source.file
                result.line = source.line
                result.inlined = source.inlined
                if result.function == nil, let name = source.function {
                    // Stripped of symbols but not of DWARF: the subprogram names the frame.
                    result.function = name
                    result.offset = vaddr &- (source.functionStart ?? vaddr)
                    result.approximate = source.functionStart == nil
                }
            }
            return result
        }
    }

    private func table(_ loaded: inout Loaded) -> ElfSymbolTable {
        if let table = loaded.table { return table }
        var images = [image]
        if let debugImage {
            images.append(debugImage)
        } else if image.section(named: ".symtab") == nil, let mini = miniDebugInfo(&loaded) {
            images.append(mini)
        }
        let table = ElfSymbolTable(images: images)
        loaded.table = table
        return table
    }

    private func miniDebugInfo(_ loaded: inout Loaded) -> ElfImage? {
        if let cached = loaded.miniDebugInfo { return cached }
        let mini = MiniDebugInfo.image(embeddedIn: image)
        loaded.miniDebugInfo = .some(mini)
        return mini
    }

    private func dwarf(_ loaded: inout Loaded) -> DwarfSourceInfo? {
        if let cached = loaded.dwarf { return cached }
        let source = [debugImage, image].compactMap { $0 }.first(where: \.hasDebugInfo).flatMap { DwarfSourceInfo(image: $0) }
        loaded.dwarf = .some(source)
        return source
    }
}
