/// CPython 3.11+'s location table (`co_linetable`, Objects/locations.md): maps a bytecode
/// offset to a line. Each entry starts with a byte whose top bit is set: bits 3–6 are the
/// entry's kind, bits 0–2 its length in code units minus one; the bytes after it (top bit
/// clear) hold the line delta and columns as 6-bit varints.
public enum PythonLineTable {
    /// The line of the instruction `codeUnit` code units into the bytecode, or `firstLine`
    /// when the table does not reach it. Bounded by the table's length; never traps on garbage.
    public static func line(for codeUnit: Int, table: [UInt8], firstLine: Int) -> Int {
        guard codeUnit >= 0 else { return firstLine }
        var line = firstLine
        var start = 0
        var index = 0
        while index < table.count {
            let first = table[index]
            guard first & 0x80 != 0 else {
                index += 1
                continue
            }
            let kind = Int((first >> 3) & 15)
            let length = Int(first & 7) + 1
            var delta = 0
            var hasLine = true
            switch kind {
            case 15: hasLine = false  // no location
            case 13, 14: delta = signedVarint(table, at: index + 1)
            case 10, 11, 12: delta = kind - 10
            default: delta = 0
            }
            line += delta
            let end = start + length
            if codeUnit < end { return hasLine ? line : firstLine }
            start = end
            index += 1
            while index < table.count, table[index] & 0x80 == 0 { index += 1 }
        }
        return line
    }

    static func signedVarint(_ table: [UInt8], at position: Int) -> Int {
        guard position < table.count else { return 0 }
        var index = position
        var byte = table[index]
        var value = Int(byte & 63)
        var shift = 0
        // At most 5 continuation bytes: a 32-bit value; more is garbage, not a line.
        while byte & 64 != 0, shift < 30 {
            index += 1
            guard index < table.count else { break }
            byte = table[index]
            shift += 6
            value |= Int(byte & 63) << shift
        }
        return value & 1 != 0 ? -(value >> 1) : value >> 1
    }
}
