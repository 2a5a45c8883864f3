#if canImport(Glibc)
import Glibc
#endif

/// Finds the separate debug file of a module the way gdb and elfutils do: by build-id under
/// `.build-id/xx/rest.debug`, then by `.gnu_debuglink` name beside the module, in its
/// `.debug/` directory and under each debug directory. A candidate is accepted only when its
/// build-id equals the module's and, when found through the debuglink, its CRC-32 matches:
/// a stale debug file would give confident wrong names, which is worse than none.
public struct DebugFileLocator: Hashable, Sendable {
    /// Prefix for paths in the target's file namespace ("/proc/PID/root"; "" for this machine).
    public var root: String
    /// Read under `root`: the target's own debug files (a container ships its own).
    public var systemDirectories: [String]
    /// Read on this machine (`--debug-dir`), before the system ones.
    public var extraDirectories: [String]

    /// Whether a build-id with no local debug file is asked of debuginfod servers.
    public var debuginfod: DebuginfodUse
    public var client: Debuginfod { Debuginfod.shared }

    public init(
        root: String = "", systemDirectories: [String] = ["/usr/lib/debug"], extraDirectories: [String] = [],
        debuginfod: DebuginfodUse = .off
    ) {
        self.root = root
        self.systemDirectories = systemDirectories
        self.extraDirectories = extraDirectories
        self.debuginfod = debuginfod
    }

    /// The directories to search, as paths readable by this process.
    var directories: [String] { extraDirectories + systemDirectories.map { root + $0 } }

    /// The symbols of `image` (mapped from `modulePath` in the target's namespace), with the
    /// best debug companion available; built once per pair of files.
    public func symbols(for image: ElfImage, modulePath: String, cache: ElfImageCache) -> ModuleSymbols {
        let debug = debugImage(for: image, modulePath: modulePath, cache: cache)
        let key = debug.map(ObjectIdentifier.init)
        return image.companions.withLock { table in
            if let existing = table[key] { return existing }
            let symbols = ModuleSymbols(image: image, debugImage: debug)
            table[key] = symbols
            return symbols
        }
    }

    public func debugImage(for image: ElfImage, modulePath: String, cache: ElfImageCache) -> ElfImage? {
        if let buildID = image.buildID {
            for path in buildIDCandidates(buildID) {
                if let candidate = cache.image(atPath: path, displayPath: path), candidate !== image,
                    candidate.buildID == buildID
                {
                    return candidate
                }
            }
        }
        if let linkBytes = image.section(named: ".gnu_debuglink"), let link = DebugLink.parse(linkBytes) {
            for path in debugLinkCandidates(link.fileName, modulePath: modulePath) {
                guard let candidate = cache.image(atPath: path, displayPath: path), candidate !== image else { continue }
                if let buildID = image.buildID, candidate.buildID != nil, candidate.buildID != buildID { continue }
                if candidate.contentCRC == link.crc { return candidate }
            }
        }
        // A file with its own DWARF and symbol table needs nothing from a server: dump waited
        // up to 30 s for such a binary (issue 27).
        if image.hasDebugInfo, image.section(named: ".symtab") != nil { return nil }
        return fetchedDebugImage(for: image, modulePath: modulePath, cache: cache)
    }

    /// Last resort, as in eu-stack: the debuginfod servers. A file whose build-id differs
    /// (a server serving garbage) is never used.
    func fetchedDebugImage(for image: ElfImage, modulePath: String, cache: ElfImageCache) -> ElfImage? {
        guard let buildID = image.buildID,
            let candidate = fetchedDebugImage(buildID: buildID, modulePath: modulePath, cache: cache),
            candidate !== image
        else { return nil }
        return candidate
    }

    public func fetchedDebugImage(buildID: String, modulePath: String, cache: ElfImageCache) -> ElfImage? {
        guard debuginfod != .off, client.enabled else { return nil }
        let outcome: Debuginfod.Outcome?
        switch debuginfod {
        case .off: return nil
        case .wait:
            outcome = client.fetch(buildID, module: modulePath.split(separator: "/").last.map(String.init) ?? modulePath)
        case .background:
            outcome = client.outcome(buildID)
            if outcome == nil { client.prefetch(buildID) }
        }
        guard case .fetched(let path)? = outcome,
            let candidate = cache.image(atPath: path, displayPath: path), candidate.buildID == buildID
        else { return nil }
        return candidate
    }

    func buildIDCandidates(_ buildID: String) -> [String] {
        guard buildID.count > 2, buildID.allSatisfy(\.isHexDigit) else { return [] }
        let relative = "/.build-id/\(buildID.prefix(2))/\(buildID.dropFirst(2)).debug"
        return directories.map { $0 + relative }
    }

    func debugLinkCandidates(_ name: String, modulePath: String) -> [String] {
        let directory = modulePath.hasPrefix("/") ? String(modulePath[..<modulePath.lastIndex(of: "/")!]) : ""
        var paths = [
            root + directory + "/" + name,
            root + directory + "/.debug/" + name,
        ]
        for base in directories {
            paths.append(base + directory + "/" + name)
            paths.append(base + "/" + name)
        }
        return paths
    }
}
