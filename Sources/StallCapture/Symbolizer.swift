import StallSymbols
/// Names the frames of an unwound stack using the process's modules. Runs with the target
/// running; results are cached per address because a stalled thread is sampled at the same
/// addresses again and again.
public final class Symbolizer {
    public private(set) var modules: ProcessModules
    public let locator: DebugFileLocator
    private let imageCache: ElfImageCache
    private var cache: [UInt64: SymbolLookup] = [:]
    private var moduleSymbols: [ObjectIdentifier: ModuleSymbols] = [:]
    private lazy var perfMap = PerfMapFile(pid: modules.pid)
    /// The perf map as checked for the stack being symbolized: one stat per stack, not one
    /// per JIT frame, in the sampling loop.
    private var perfMapForStack: PerfMap??
    private var symbolizingStack = false

    /// `debugDirectories` are searched (on this machine) before the target's own
    /// `/usr/lib/debug`, which is read through `/proc/PID/root`.
    /// Debug files downloaded so far: names cached before a download may lack its names.
    private var debuginfodGeneration = 0

    public init(
        modules: ProcessModules, debugDirectories: [String] = [], imageCache: ElfImageCache = .shared,
        debuginfod: DebuginfodUse = .off
    ) {
        self.modules = modules
        self.imageCache = imageCache
        locator = DebugFileLocator(
            root: "/proc/\(modules.pid)/root", extraDirectories: debugDirectories, debuginfod: debuginfod)
    }

    /// True (once) when a debug file arrived from debuginfod since the last call: cached
    /// names are dropped so the next lookups use it.
    @discardableResult
    public func refreshAfterDownloads() -> Bool {
        guard locator.debuginfod == .background else { return false }
        let current = locator.client.generation
        guard current != debuginfodGeneration else { return false }
        debuginfodGeneration = current
        cache = [:]
        moduleSymbols = [:]
        return true
    }

    public func update(modules: ProcessModules) {
        guard modules !== self.modules else { return }
        self.modules = modules
        cache = [:]
        moduleSymbols = [:]
    }

    /// `sourceLines` false names the frames from the symbol tables alone (see
    /// `ModuleSymbols.lookupName`), for callers that only compare names: no file, line or
    /// inlined frames, and no DWARF read where a table has the name.
    public func symbolize(_ stack: UnwoundStack, sourceLines: Bool = true) -> [SymbolizedFrame] {
        refreshAfterDownloads()
        symbolizingStack = true
        defer {
            symbolizingStack = false
            perfMapForStack = nil
        }
        var native = stack.frames.enumerated().map { index, frame in symbolize(frame, index: index, sourceLines: sourceLines) }
        for (index, function) in stack.javascript where native.indices.contains(index) {
            native[index] = SymbolizedFrame(javascript: function, index: index, frame: stack.frames[index])
        }
        if let php = stack.php { native = PHPStackSplicer.splice(native, php) }
        if let ruby = stack.ruby { native = RubyStackSplicer.splice(native, ruby) }
        guard let python = stack.python else { return native }
        return PythonStackSplicer.splice(native, python)
    }

    /// The module's symbols with its debug companion, located on first use.
    public func symbols(for module: LoadedModule) -> ModuleSymbols? {
        guard let image = module.image else { return nil }
        if let known = moduleSymbols[ObjectIdentifier(module)] { return known }
        let path = module.path.hasSuffix(" (deleted)") ? String(module.path.dropLast(10)) : module.path
        let symbols = locator.symbols(for: image, modulePath: path, cache: imageCache)
        moduleSymbols[ObjectIdentifier(module)] = symbols
        return symbols
    }

    /// Code with no file (a JIT's) is named from the process's perf map, only inside anonymous
    /// executable mappings so a stale map cannot rename anything else. Not cached: a JIT
    /// reuses addresses.
    func jitSymbol(_ address: UInt64) -> PerfMap.Entry? {
        guard let mapping = modules.mapping(containing: address), mapping.executable, !mapping.isFileBacked
        else { return nil }
        guard symbolizingStack else { return perfMap.current()?.lookup(address) }
        if perfMapForStack == nil { perfMapForStack = .some(perfMap.current()) }
        return perfMapForStack??.lookup(address)
    }

    public func symbolize(_ frame: UnwoundFrame, index: Int, sourceLines: Bool = true) -> SymbolizedFrame {
        let lookup = frame.lookupAddress(isInnermost: index == 0)
        guard let module = modules.module(containing: lookup) else {
            let jit = jitSymbol(lookup)
            return SymbolizedFrame(
                index: index, address: frame.address, stackPointer: frame.stackPointer, module: nil,
                modulePath: nil, buildId: nil, moduleOffset: nil, function: jit?.name,
                functionOffset: jit.map { frame.address - $0.start }, approximate: false,
                isSignalFrame: frame.isSignalFrame)
        }
        var result = SymbolizedFrame(
            index: index, address: frame.address, stackPointer: frame.stackPointer, module: module.name,
            modulePath: module.path, buildId: module.image?.buildID,
            moduleOffset: module.moduleOffset(of: frame.address), function: nil, functionOffset: nil,
            approximate: false, isSignalFrame: frame.isSignalFrame)
        let symbol: SymbolLookup?
        if let cached = cache[lookup] {
            symbol = cached
        } else if !sourceLines {
            // Not cached: the cache holds full lookups, which reports need.
            symbol = symbols(for: module)?.lookupName(module.moduleOffset(of: lookup))
        } else {
            symbol = symbols(for: module)?.lookup(module.moduleOffset(of: lookup))
            if cache.count > 100_000 { cache.removeAll(keepingCapacity: true) }
            cache[lookup] = symbol
        }
        if let symbol { result.apply(symbol) }
        return result
    }
}
