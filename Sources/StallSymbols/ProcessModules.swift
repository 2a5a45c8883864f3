import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// The modules of one process at one moment, built from `/proc/PID/maps`. Files are opened
/// through `/proc/PID/root` so a target in a container or chroot resolves its own paths.
public final class ProcessModules {
    public let pid: Int32
    public let maps: [MemoryMapEntry]
    public let modules: [LoadedModule]
    /// The signature of the maps text, to notice dlopen/exec cheaply.
    public let mapsSignature: Int
    private let ranges: [(start: UInt64, end: UInt64, module: Int)]

    public convenience init(pid: Int32, cache: ElfImageCache = .shared) throws {
        try self.init(pid: pid, mapsText: try ProcFS.readText("/proc/\(pid)/maps", pid: pid), cache: cache)
    }

    public init(pid: Int32, mapsText text: String, cache: ElfImageCache = .shared) throws {
        self.pid = pid
        mapsSignature = text.hashValue
        let maps = MemoryMapEntry.parseAll(text)
        self.maps = maps
        // A path's mappings are split into address clusters: a file mapped as data elsewhere
        // (a database's mmap, or the ELF images this very agent maps to read symbols) must
        // not be mistaken for the loaded copy. A cluster is a module if it has code.
        var clusters: [(key: String, entries: [MemoryMapEntry])] = []
        var open: [String: Int] = [:]
        for entry in maps {
            let key: String
            if entry.isFileBacked {
                key = entry.path
            } else if entry.path == "[vdso]" {
                key = "[vdso]"
            } else {
                continue
            }
            if let index = open[key], let last = clusters[index].entries.last,
                entry.start >= last.end, entry.start - last.end < 1 << 24, entry.fileOffset >= last.fileOffset
            {
                clusters[index].entries.append(entry)
            } else {
                open[key] = clusters.count
                clusters.append((key, [entry]))
            }
        }
        var modules: [LoadedModule] = []
        let executable = try? ProcFS.readLink("/proc/\(pid)/exe", pid: pid)
        for (path, mappings) in clusters where mappings.contains(where: \.executable) || path == "[vdso]" {
            var image: ElfImage?
            var unavailable: ElfImageCache.Unavailable?
            if path == "[vdso]" {
                image = ProcessModules.vdsoImage(pid: pid, mapping: mappings[0])
            } else {
                let cleanPath = path.hasSuffix(" (deleted)") ? String(path.dropLast(10)) : path
                // The executable mapping names the file most surely (map_files needs a range).
                let mapping = mappings.first(where: \.executable) ?? mappings[0]
                (image, unavailable) = cache.moduleImage(pid: pid, mapping: mapping, path: cleanPath)
            }
            let alias = path == executable ? ExecutableAlias.name(pid: pid, mappedPath: path) : nil
            modules.append(LoadedModule(path: path, mappings: mappings, image: image, alias: alias, unavailable: unavailable))
        }
        self.modules = modules.sorted { $0.start < $1.start }
        var ranges: [(start: UInt64, end: UInt64, module: Int)] = []
        for (index, module) in self.modules.enumerated() {
            for mapping in module.mappings { ranges.append((mapping.start, mapping.end, index)) }
        }
        self.ranges = ranges.sorted { $0.start < $1.start }
    }

    /// The vDSO has no file; its image is read from the target's memory.
    private static func vdsoImage(pid: Int32, mapping: MemoryMapEntry) -> ElfImage? {
        let size = Int(mapping.end - mapping.start)
        guard size > 0, size <= 1 << 20 else { return nil }
        var bytes = [UInt8](repeating: 0, count: size)
        let n = bytes.withUnsafeMutableBytes { TargetMemory.read(pid: pid, address: mapping.start, into: $0) }
        guard n == size else { return nil }
        return try? ElfImage(memory: bytes, path: "[vdso]")
    }

    /// The module whose mappings contain `address`: a binary search over every mapping.
    public func module(containing address: UInt64) -> LoadedModule? {
        let low = ranges.countStarting(atOrBelow: address) { $0.start }
        guard low > 0 else { return nil }
        let range = ranges[low - 1]
        return address < range.end ? modules[range.module] : nil
    }

    /// Binary search (maps are sorted by address): this runs while a captured thread is
    /// stopped, to bound its stack copy.
    public func mapping(containing address: UInt64) -> MemoryMapEntry? {
        let low = maps.countStarting(atOrBelow: address) { $0.start }
        return low > 0 && maps[low - 1].contains(address) ? maps[low - 1] : nil
    }

    /// The main thread's stack mapping, as it was when maps was read.
    public private(set) lazy var mainStack: MemoryMapEntry? = maps.first { $0.path == "[stack]" }
}
