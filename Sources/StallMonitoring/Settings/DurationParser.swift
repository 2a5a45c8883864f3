import Foundation

/// Parses the durations users type: "1.5", "1.5s", "250ms", "2m", "1h", "14d", "100us".
public enum DurationParser {
    static let units: [(suffix: String, scale: Double)] = [
        ("ms", 1e-3), ("us", 1e-6), ("µs", 1e-6), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400),
    ]

    /// Seconds, or nil for text that is not a duration, a negative one, or one too large for a Double.
    public static func parse(_ text: String) -> Double? {
        guard let seconds = parseSigned(text), seconds.isFinite, seconds >= 0 else { return nil }
        return seconds
    }

    /// Seconds with the sign and size as typed (negative and infinite included), so that a
    /// caller can say "out of range" rather than "not a duration" for `-1s` or `1e400s`.
    /// nil: not a number with a known unit (NaN included).
    static func parseSigned(_ text: String) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard let (value, scale) = NumberWithUnit.split(trimmed, units: units) else { return nil }
        return value * scale
    }
}
