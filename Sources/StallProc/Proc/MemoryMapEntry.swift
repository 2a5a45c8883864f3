/// One line of `/proc/PID/maps`.
public struct MemoryMapEntry: Equatable, Sendable {
    public var start: UInt64
    public var end: UInt64
    public var readable: Bool
    public var writable: Bool
    public var executable: Bool
    public var fileOffset: UInt64
    public var inode: UInt64
    public var device: String
    /// The file path, a pseudo-name such as `[stack]` or `[vdso]`, or empty for anonymous memory.
    public var path: String

    public var isFileBacked: Bool { inode != 0 && path.hasPrefix("/") }
    public var isDeleted: Bool { path.hasSuffix(" (deleted)") }

    public func contains(_ address: UInt64) -> Bool { address >= start && address < end }

    public static func parse(_ line: Substring) -> MemoryMapEntry? {
        // start-end perms offset dev inode [path]; the path may contain spaces.
        var rest = line[...]
        func nextWord() -> Substring? {
            rest = rest.drop(while: { $0 == " " })
            guard !rest.isEmpty else { return nil }
            let word = rest.prefix(while: { $0 != " " })
            rest = rest[word.endIndex...]
            return word
        }
        guard let range = nextWord(), let perms = nextWord(), let offset = nextWord(),
            let device = nextWord(), let inode = nextWord(),
            let dash = range.firstIndex(of: "-"),
            let start = UInt64(range[..<dash], radix: 16),
            let end = UInt64(range[range.index(after: dash)...], radix: 16),
            let fileOffset = UInt64(offset, radix: 16), let inodeNumber = UInt64(inode),
            perms.count >= 3
        else { return nil }
        // The kernel escapes a newline in a path as \012 (seq_file_path): undo it so the file
        // can be opened.
        var path = String(rest.drop(while: { $0 == " " }))
        if path.contains("\\012") { path = path.replacingOccurrences(of: "\\012", with: "\n") }
        let p = Array(perms)
        return MemoryMapEntry(
            start: start, end: end, readable: p[0] == "r", writable: p[1] == "w",
            executable: p[2] == "x", fileOffset: fileOffset, inode: inodeNumber,
            device: String(device), path: path)
    }

    public static func parseAll(_ text: String) -> [MemoryMapEntry] {
        text.split(separator: "\n").compactMap(parse)
    }
}
