import Foundation
import StallProc

#if canImport(Glibc)
import Glibc
#endif

/// Where and when, for every report and loop health line: the host's name and the wall clock's
/// offset from the monotonic clock stalls are timed by, both read once when the watch is set up.
struct HostStamp {
    let hostname: String
    /// Wall-clock seconds minus monotonic seconds at the start of the watch.
    let wallClockOffset: Double

    /// Reads the clocks, then the host's name.
    init(
        wallClock: () -> Double = { Date().timeIntervalSince1970 }, monotonic: () -> Double = MonotonicTime.seconds,
        hostname: () -> [UInt8] = HostStamp.systemHostname
    ) {
        wallClockOffset = wallClock() - monotonic()
        self.hostname = Self.name(fromBuffer: hostname())
    }

    /// gethostname(2)'s buffer, NUL-terminated.
    static func systemHostname() -> [UInt8] {
        var host = [UInt8](repeating: 0, count: 256)
        gethostname(&host, host.count - 1)
        return host
    }

    /// The name in a NUL-terminated buffer.
    static func name(fromBuffer buffer: [UInt8]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
    }
}
