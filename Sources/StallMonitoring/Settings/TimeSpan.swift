/// A length of time as users type it (`250ms`, `1.5s`, `30d`), in seconds. Not `Swift.Duration`:
/// the monitor computes in `Double` seconds throughout, and this type is what the settings
/// table bounds and prints.
public struct TimeSpan: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var seconds: Double

    public init(seconds: Double) { self.seconds = seconds }

    public static func seconds(_ value: Double) -> TimeSpan { TimeSpan(seconds: value) }
    public static func milliseconds(_ value: Double) -> TimeSpan { TimeSpan(seconds: value / 1000) }
    public static func days(_ value: Double) -> TimeSpan { TimeSpan(seconds: value * 86400) }

    /// "off" for the settings that accept it (`launch-threshold: off`): never.
    public static let forever = TimeSpan(seconds: .infinity)

    public static func < (lhs: TimeSpan, rhs: TimeSpan) -> Bool { lhs.seconds < rhs.seconds }

    /// The largest unit that shows the value whole (`90s`, `2m`, `366d`), seconds with a
    /// fraction from one second up (`1.5s`), milliseconds below.
    public var description: String {
        if !seconds.isFinite { return "off" }
        if seconds == 0 { return "0s" }
        for (suffix, scale) in [("d", 86400.0), ("h", 3600), ("m", 60), ("s", 1), ("ms", 1e-3), ("us", 1e-6)] {
            let count = seconds / scale
            guard abs(count) >= 1 else { continue }
            if count == count.rounded(), abs(count) < 1e15 { return "\(Int(count))\(suffix)" }
            if scale == 1 { return "\(count)s" }
        }
        return "\(seconds)s"
    }
}

extension TimeSpan: SettingValue {
    public static var expectation: String { "a duration (examples: 1.5s, 250ms, 2m, 30d)" }

    public static func parse(_ text: String) -> SettingParse<TimeSpan> {
        guard let seconds = DurationParser.parseSigned(text) else { return .malformed }
        // Negative and infinite durations have the right form; their setting names its range.
        guard seconds.isFinite, seconds >= 0 else { return .outOfRange }
        return .value(TimeSpan(seconds: seconds))
    }
}
