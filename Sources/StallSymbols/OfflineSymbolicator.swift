#if canImport(Glibc)
import Glibc
#endif

/// Symbolicates frames captured elsewhere from what a report keeps of them: the module's
/// build-id and the module offset. The module is found by build-id only, so a different
/// build of the same file name is never used: in each debug directory under `.build-id/`,
/// as a file named like the module, or at the module's original path on this machine.
public final class OfflineSymbolicator {
    public let locator: DebugFileLocator
    private let cache: ElfImageCache
    private var resolved: [String: ModuleSymbols?] = [:]

    public init(debugDirectories: [String], cache: ElfImageCache = ElfImageCache(), debuginfod: DebuginfodUse = .off) {
        locator = DebugFileLocator(root: "", extraDirectories: debugDirectories, debuginfod: debuginfod)
        self.cache = cache
    }

    /// The symbols for a build-id, or nil when no file with that build-id is found.
    public func symbols(buildID: String, modulePath: String?) -> ModuleSymbols? {
        let key = buildID + "\u{0}" + (modulePath ?? "")
        if let known = resolved[key] { return known }
        var result: ModuleSymbols?
        if let image = moduleImage(buildID: buildID, modulePath: modulePath) {
            result = locator.symbols(for: image, modulePath: modulePath ?? image.path, cache: cache)
        } else if let debug = locator.buildIDCandidates(buildID).lazy
            .compactMap({ self.cache.image(atPath: $0, displayPath: $0) }).first(where: { $0.buildID == buildID })
        {
            result = locator.symbols(for: debug, modulePath: debug.path, cache: cache)
        } else if let debug = locator.fetchedDebugImage(buildID: buildID, modulePath: modulePath ?? buildID, cache: cache) {
            // Neither the module nor its debug file is on this machine: the server's is.
            result = locator.symbols(for: debug, modulePath: debug.path, cache: cache)
        }
        resolved[key] = result
        return result
    }

    private func moduleImage(buildID: String, modulePath: String?) -> ElfImage? {
        var paths: [String] = []
        if let modulePath, modulePath.hasPrefix("/") {
            paths.append(modulePath)
            let name = modulePath.split(separator: "/").last.map(String.init) ?? modulePath
            for directory in locator.extraDirectories {
                paths.append(directory + "/" + name)
                paths.append(directory + modulePath)
            }
        }
        for path in paths {
            if let image = cache.image(atPath: path, displayPath: path), image.buildID == buildID { return image }
        }
        return nil
    }

    /// Fills `frame`'s names, lines and inlines. Returns false (frame untouched) when its
    /// module is not found or knows nothing about the address, so a name the agent found
    /// live (a perf map, a guess) is never replaced by nothing.
    @discardableResult
    public func symbolicate(_ frame: inout SymbolizedFrame) -> Bool {
        guard let buildID = frame.buildId, let offset = frame.lookupOffset,
            let symbols = symbols(buildID: buildID, modulePath: frame.modulePath)
        else { return false }
        let lookup = symbols.lookup(offset)
        guard !lookup.isEmpty else { return false }
        // An exact name already in the report beats a guess from fewer symbols here.
        if lookup.approximate, frame.function != nil, !frame.approximate, lookup.file == nil { return false }
        let previous = frame
        frame.apply(lookup)
        if lookup.function == nil, previous.function != nil {
            // Lines without a symbol: keep the name the report had.
            frame.function = previous.function
            frame.functionOffset = previous.functionOffset
            frame.approximate = previous.approximate
        }
        return true
    }
}
