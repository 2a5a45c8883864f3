import Testing

@testable import StallMonitoring

/// The wall clock's offset from the monotonic clock, and the host's name from gethostname's
/// buffer, from fake clocks and buffers.
@Suite struct HostStampTests {
    @Test func theOffsetIsWallMinusMonotonic() {
        let stamp = HostStamp(wallClock: { 1_795_252_958.5 }, monotonic: { 12_345.25 }, hostname: { Array("db-7".utf8) + [0] })
        #expect(stamp.wallClockOffset == 1_795_252_958.5 - 12_345.25)
        #expect(stamp.hostname == "db-7")
    }

    /// The name ends at the first NUL; a buffer with none is the name entire, an empty one no name.
    @Test func theNameEndsAtTheFirstNUL() {
        #expect(HostStamp.name(fromBuffer: Array("web-1".utf8) + [0, 0x41, 0]) == "web-1")
        #expect(HostStamp.name(fromBuffer: Array("edge".utf8)) == "edge")
        #expect(HostStamp.name(fromBuffer: [0, 0x41]) == "")
        #expect(HostStamp.name(fromBuffer: []) == "")
    }
}
