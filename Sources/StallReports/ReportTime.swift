import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Timestamps as reports print them: local wall time with milliseconds and offset.
///
/// Formatted from `localtime_r`, not `DateFormatter`: a formatter loads ICU, whose data alone
/// added ~5 MB to the agent's RSS and a millisecond to every `dump` for one timestamp.
public enum ReportTime {
    /// `2026-11-21T09:22:39.123+01:00` (`Z` for UTC), as `yyyy-MM-dd'T'HH:mm:ss.SSSZZZZZ`.
    public static func iso8601(_ date: Date) -> String {
        let (t, millis) = local(date)
        return iso8601(t, millis: millis)
    }

    static func iso8601(_ t: tm, millis: Int) -> String {
        let offset = t.tm_gmtoff
        let zone = offset == 0 ? "Z" : sign(offset) + pad(abs(offset) / 3600, 2) + ":" + pad(abs(offset) / 60 % 60, 2)
        return day(t, "-") + "T" + time(t) + "." + pad(millis, 3) + zone
    }

    /// Reads what `iso8601` writes, and ISO-8601 without fractions or with `±hhmm`: by hand,
    /// not with a DateFormatter (~0.2-0.5 ms a date here, which was half of reading 10 000
    /// reports for `view`). Nil for anything else.
    public static func parse(_ text: String) -> Date? {
        let b = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= b.count else { return nil }
            var value = 0
            for i in start..<(start + count) {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                value = value * 10 + Int(b[i] - 48)
            }
            return value
        }
        guard b.count >= 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T"),
            b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
            let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
            let minute = number(14, 2), let second = number(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fraction = 0.0
        if index < b.count, b[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            let start = index
            while index < b.count, b[index] >= 48, b[index] <= 57 {
                fraction += Double(b[index] - 48) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < b.count else { return nil }
        var offset = 0
        if b[index] == UInt8(ascii: "Z") {
            index += 1
        } else if b[index] == UInt8(ascii: "+") || b[index] == UInt8(ascii: "-") {
            let sign = b[index] == UInt8(ascii: "-") ? -1 : 1
            guard let hours = number(index + 1, 2) else { return nil }
            let colon = index + 3 < b.count && b[index + 3] == UInt8(ascii: ":")
            guard let minutes = number(index + (colon ? 4 : 3), 2), hours < 24, minutes < 60 else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
            index += colon ? 6 : 5
        } else {
            return nil
        }
        guard index == b.count else { return nil }
        var t = tm()
        t.tm_year = Int32(year - 1900)
        t.tm_mon = Int32(month - 1)
        t.tm_mday = Int32(day)
        t.tm_hour = Int32(hour)
        t.tm_min = Int32(minute)
        t.tm_sec = Int32(second)
        let utc = timegm(&t)
        return Date(timeIntervalSince1970: Double(utc - offset) + fraction)
    }

    /// `2026-11-21 09:22:39.123 +0100`, as `yyyy-MM-dd HH:mm:ss.SSS Z`.
    public static func human(_ date: Date) -> String {
        let (t, millis) = local(date)
        return human(t, millis: millis)
    }

    static func human(_ t: tm, millis: Int) -> String {
        let offset = t.tm_gmtoff
        return day(t, "-") + " " + time(t) + "." + pad(millis, 3) + " " + sign(offset) + pad(abs(offset) / 3600, 2)
            + pad(abs(offset) / 60 % 60, 2)
    }

    /// `20261121-092239`, as `yyyyMMdd-HHmmss` (report file names).
    public static func fileStamp(_ date: Date) -> String {
        fileStamp(local(date).0)
    }

    static func fileStamp(_ t: tm) -> String {
        day(t, "") + "-" + pad(Int(t.tm_hour), 2) + pad(Int(t.tm_min), 2) + pad(Int(t.tm_sec), 2)
    }

    /// Broken-down local time and milliseconds, truncated as DateFormatter does.
    static func local(_ date: Date) -> (tm, Int) {
        let totalMillis = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let (seconds, millis) = totalMillis.quotientAndRemainder(dividingBy: 1000)
        var time = millis < 0 ? time_t(seconds - 1) : time_t(seconds)
        var t = tm()
        localtime_r(&time, &t)
        return (t, Int(millis < 0 ? millis + 1000 : millis))
    }

    private static func day(_ t: tm, _ separator: String) -> String {
        pad(Int(t.tm_year) + 1900, 4) + separator + pad(Int(t.tm_mon) + 1, 2) + separator + pad(Int(t.tm_mday), 2)
    }

    private static func time(_ t: tm) -> String { pad(Int(t.tm_hour), 2) + ":" + pad(Int(t.tm_min), 2) + ":" + pad(Int(t.tm_sec), 2) }

    private static func sign(_ offset: Int) -> String { offset < 0 ? "-" : "+" }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
