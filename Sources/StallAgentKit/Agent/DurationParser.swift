import Foundation

/// Parses the durations users type: "1.5", "1.5s", "250ms", "2m", "1h", "14d", "100us".
public enum DurationParser {
    public static func parse(_ text: String) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [(String, Double)] = [("ms", 1e-3), ("us", 1e-6), ("µs", 1e-6), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        var number = trimmed
        var scale = 1.0
        for (suffix, factor) in units where trimmed.hasSuffix(suffix) {
            number = String(trimmed.dropLast(suffix.count))
            scale = factor
            break
        }
        guard !number.isEmpty, let value = Double(number), value.isFinite, value >= 0 else { return nil }
        return value * scale
    }
}
