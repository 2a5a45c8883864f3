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
