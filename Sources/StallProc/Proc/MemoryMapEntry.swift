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
        var line = line
        return line.withUTF8 { parse(bytes: $0) }
    }

    /// Parsed as bytes, not Characters: the maps of every process a family watch attaches to
    /// are parsed, and Character-wise splitting was a fifth of the agent's time over
    /// PostgreSQL under pgbench (50 backends connecting).
    static func parse(bytes: UnsafeBufferPointer<UInt8>) -> MemoryMapEntry? {
        // start-end perms offset dev inode [path]; the path may contain spaces.
        var index = 0
        func nextWord() -> Range<Int>? {
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 }
            guard index < bytes.count else { return nil }
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: " ") { index += 1 }
            return start..<index
        }
        func number(_ range: Range<Int>, radix: UInt64) -> UInt64? {
            guard !range.isEmpty else { return nil }
            var value: UInt64 = 0
            for position in range {
                let c = bytes[position]
                let digit: UInt64
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(c - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f") where radix == 16: digit = UInt64(c - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F") where radix == 16: digit = UInt64(c - UInt8(ascii: "A") + 10)
                default: return nil
                }
                let (shifted, overflow) = value.multipliedReportingOverflow(by: radix)
                let (sum, carry) = shifted.addingReportingOverflow(digit)
                guard !overflow, !carry else { return nil }
                value = sum
            }
            return value
        }
        guard let range = nextWord(), let perms = nextWord(), let offset = nextWord(),
            let device = nextWord(), let inode = nextWord(),
            let dash = range.first(where: { bytes[$0] == UInt8(ascii: "-") }),
            let start = number(range.lowerBound..<dash, radix: 16),
            let end = number((dash + 1)..<range.upperBound, radix: 16),
            let fileOffset = number(offset, radix: 16), let inodeNumber = number(inode, radix: 10),
            perms.count >= 3
        else { return nil }
        while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 }
        // The kernel escapes a newline in a path as \012 (seq_file_path): undo it so the file
        // can be opened.
        var path = String(decoding: UnsafeBufferPointer(rebasing: bytes[index...]), as: UTF8.self)
        if path.utf8.contains(UInt8(ascii: "\\")), path.contains("\\012") {
            path = path.replacingOccurrences(of: "\\012", with: "\n")
        }
        let p = perms.lowerBound
        return MemoryMapEntry(
            start: start, end: end, readable: bytes[p] == UInt8(ascii: "r"), writable: bytes[p + 1] == UInt8(ascii: "w"),
            executable: bytes[p + 2] == UInt8(ascii: "x"), fileOffset: fileOffset, inode: inodeNumber,
            device: String(decoding: UnsafeBufferPointer(rebasing: bytes[device]), as: UTF8.self), path: path)
    }

    public static func parseAll(_ text: String) -> [MemoryMapEntry] {
        var text = text
        return text.withUTF8 { bytes in
            var entries: [MemoryMapEntry] = []
            var lineStart = 0
            for index in 0...bytes.count where index == bytes.count || bytes[index] == UInt8(ascii: "\n") {
                if index > lineStart, let entry = parse(bytes: UnsafeBufferPointer(rebasing: bytes[lineStart..<index])) {
                    entries.append(entry)
                }
                lineStart = index + 1
            }
            return entries
        }
    }
}
