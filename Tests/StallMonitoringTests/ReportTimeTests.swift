import Foundation
import Testing

@testable import StallReports
@testable import StallMonitoring

#if canImport(Glibc)
import Glibc
#endif

/// ReportTime formats without ICU; its text must stay what DateFormatter wrote (reports and
/// file names are compared and parsed by tools).
@Suite struct ReportTimeTests {
    static func formatter(_ format: String, _ zone: TimeZone) -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = zone
        formatter.dateFormat = format
        return formatter
    }

    static let dates: [Date] = {
        var generator = JitterGenerator(seed: 7)
        return [Date(timeIntervalSince1970: 1_795_000_000), Date(timeIntervalSince1970: 1_711_846_799.999)]
            + (0..<200).map { _ in
                Date(timeIntervalSince1970: Double(UInt64.random(in: 1_600_000_000_000..<1_900_000_000_000, using: &generator)) / 1000)
            }
    }()

    /// The process's own zone, through localtime_r.
    @Test func matchesDateFormatterInTheLocalZone() {
        for date in Self.dates {
            #expect(ReportTime.iso8601(date) == Self.formatter("yyyy-MM-dd'T'HH:mm:ss.SSSZZZZZ", .current).string(from: date))
            #expect(ReportTime.human(date) == Self.formatter("yyyy-MM-dd HH:mm:ss.SSS Z", .current).string(from: date))
            #expect(ReportTime.fileStamp(date) == Self.formatter("yyyyMMdd-HHmmss", .current).string(from: date))
        }
    }

    /// Offsets east, west, by half hours and zero, without touching the process's TZ (other
    /// suites run meanwhile).
    @Test(arguments: [0, 3600, -12600, 19800, -36000])
    func matchesDateFormatterAtOffset(_ offset: Int) throws {
        let zone = try #require(TimeZone(secondsFromGMT: offset))
        for date in Self.dates {
            let totalMillis = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
            var time = time_t(totalMillis / 1000 + Int64(offset))
            var t = tm()
            gmtime_r(&time, &t)
            t.tm_gmtoff = offset
            let millis = Int(totalMillis % 1000)
            #expect(ReportTime.iso8601(t, millis: millis) == Self.formatter("yyyy-MM-dd'T'HH:mm:ss.SSSZZZZZ", zone).string(from: date))
            #expect(ReportTime.human(t, millis: millis) == Self.formatter("yyyy-MM-dd HH:mm:ss.SSS Z", zone).string(from: date))
            #expect(ReportTime.fileStamp(t) == Self.formatter("yyyyMMdd-HHmmss", zone).string(from: date))
        }
    }

    /// `parse` reads back what `iso8601` writes at any offset, to the millisecond, and agrees
    /// with DateFormatter on the forms it accepts.
    @Test(arguments: [0, 3600, -12600, 19800, -36000])
    func parseReadsWhatIso8601Writes(_ offset: Int) throws {
        let zone = try #require(TimeZone(secondsFromGMT: offset))
        for date in Self.dates {
            let text = Self.formatter("yyyy-MM-dd'T'HH:mm:ss.SSSZZZZZ", zone).string(from: date)
            let parsed = try #require(ReportTime.parse(text), "\(text)")
            #expect(abs(parsed.timeIntervalSince1970 - (date.timeIntervalSince1970 * 1000).rounded(.down) / 1000) < 0.0005, "\(text)")
            let plain = Self.formatter("yyyy-MM-dd'T'HH:mm:ssZ", zone).string(from: date)
            #expect(ReportTime.parse(plain) == Self.formatter("yyyy-MM-dd'T'HH:mm:ssZ", zone).date(from: plain), "\(plain)")
        }
        #expect(ReportTime.parse(ReportTime.iso8601(Self.dates[0])).map { abs($0.timeIntervalSince(Self.dates[0])) < 0.001 } == true)
    }

    @Test func parseRefusesWhatIsNotATimestamp() {
        for text in [
            "", "2026-11-21", "2026-11-21T09:22:39", "2026-11-21T09:22:39.+01:00", "2026-13-21T09:22:39Z", "2026-11-21T25:22:39Z",
            "2026-11-21T09:22:39.123+1", "2026-11-21T09:22:39.123Zjunk", "2026-11-21 09:22:39Z", "x026-11-21T09:22:39Z",
        ] {
            #expect(ReportTime.parse(text) == nil, "\(text)")
        }
        #expect(ReportTime.parse("2026-11-21T09:22:39Z") == Date(timeIntervalSince1970: 1_795_252_959))
        #expect(ReportTime.parse("2026-11-21T10:22:39.500+01:00") == Date(timeIntervalSince1970: 1_795_252_959.5))
    }
}
