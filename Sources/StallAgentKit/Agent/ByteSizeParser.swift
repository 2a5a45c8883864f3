import Foundation

/// Parses sizes users type: "500", "64k", "100MB", "1.5GiB". Decimal suffixes (kB, MB, GB)
/// are powers of 1000, binary ones (KiB, MiB, GiB) and bare letters (k, M, G) powers of 1024.
public enum ByteSizeParser {
    public static func parse(_ text: String) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(String, Double)] = [
            ("KiB", 1024), ("MiB", 1_048_576), ("GiB", 1_073_741_824), ("TiB", 1_099_511_627_776),
            ("kB", 1e3), ("KB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12),
            ("k", 1024), ("K", 1024), ("M", 1_048_576), ("G", 1_073_741_824), ("T", 1_099_511_627_776), ("B", 1),
        ]
        var number = trimmed
        var scale = 1.0
        for (suffix, factor) in units where trimmed.hasSuffix(suffix) {
            number = String(trimmed.dropLast(suffix.count)).trimmingCharacters(in: .whitespaces)
            scale = factor
            break
        }
        guard !number.isEmpty, let value = Double(number), value.isFinite, value >= 0,
              value * scale < 9e18
        else { return nil }
        return Int64(value * scale)
    }
}
