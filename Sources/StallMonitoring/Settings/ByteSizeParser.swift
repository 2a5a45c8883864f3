import Foundation

/// Parses sizes users type: "500", "64k", "100MB", "1.5GiB". Decimal suffixes (kB, MB, GB)
/// are powers of 1000, binary ones (KiB, MiB, GiB) and bare letters (k, M, G) powers of 1024.
public enum ByteSizeParser {
    static let units: [(suffix: String, scale: Double)] = [
        ("KiB", 1024), ("MiB", 1_048_576), ("GiB", 1_073_741_824), ("TiB", 1_099_511_627_776),
        ("kB", 1e3), ("KB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12),
        ("k", 1024), ("K", 1024), ("M", 1_048_576), ("G", 1_073_741_824), ("T", 1_099_511_627_776), ("B", 1),
    ]

    /// Bytes, or nil for text that is not a size, a negative one, or one of 9e18 bytes or more.
    public static func parse(_ text: String) -> Int64? {
        guard let bytes = parseSigned(text), bytes >= 0, bytes < 9e18 else { return nil }
        return Int64(bytes)
    }

    /// Bytes with the sign and size as typed, so that a caller can say "out of range" rather
    /// than "not a size" for `-1` or `1e30`. nil: not a number with a known unit (NaN included).
    static func parseSigned(_ text: String) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let (value, scale) = NumberWithUnit.split(trimmed, units: units) else { return nil }
        return value * scale
    }
}
