import StallDetection
import Testing

@testable import StallProc

/// The C drain of a thread's wait stamps (`sa_perf_wait_stamps_drain`, through
/// `LoopTurnCounter.drain`), on rings written by hand the kernel's way (`StampRing`). It is
/// what every fake stamping counter in these tests adds up with.
@Suite struct WaitStampDrainTests {
    typealias Stamp = WaitStampSummary.Stamp
    static let home = HomeWaitTracker.Site(pc: 0x7f00_1000, sp: 0x7ffd_1000)
    static let nested = HomeWaitTracker.Site(pc: 0x7f00_1000, sp: 0x7ffb_0000)

    @Test func turnsAtHomeGiveTheLastEntryAndTheExitAfterIt() {
        let ring = StampRing()
        for (entered, time) in [(true, 1.0), (false, 1.25), (true, 1.5), (false, 1.75)] {
            ring.write(Stamp(entered: entered, time: time, site: Self.home))
        }
        let summary = ring.drain(home: Self.home)
        #expect(summary.stamps == 4)
        #expect(!summary.lost && summary.otherSite == nil)
        #expect(summary.lastHomeEntry == 1.5 && summary.leftHome == 1.75)
        #expect(!summary.lastEntered && summary.lastTime == 1.75)
        // Drained: nothing the second time.
        let again = ring.drain(home: Self.home)
        #expect(again.stamps == 0 && again.lastTime == nil && again.lastHomeEntry == nil)
    }

    @Test func anEntryAtHomeClearsTheExitBeforeIt() {
        let ring = StampRing()
        ring.write(Stamp(entered: false, time: 2.0, site: Self.home))
        ring.write(Stamp(entered: true, time: 2.5, site: Self.home))
        let summary = ring.drain(home: Self.home)
        #expect(summary.lastHomeEntry == 2.5 && summary.leftHome == nil && summary.lastEntered)
    }

    @Test func theFirstStampElsewhereIsNamedAndHomeStillCounts() {
        let ring = StampRing()
        let elsewhere = HomeWaitTracker.Site(pc: 0x5500_2000, sp: 0x7ffd_0f00)
        ring.write(Stamp(entered: false, time: 1.0, site: Self.home))
        ring.write(Stamp(entered: true, time: 1.1, site: Self.nested))
        ring.write(Stamp(entered: false, time: 1.2, site: Self.nested))
        ring.write(Stamp(entered: true, time: 1.3, site: elsewhere))
        ring.write(Stamp(entered: true, time: 1.4, site: Self.home))
        let summary = ring.drain(home: Self.home)
        #expect(summary.stamps == 5 && summary.otherSite == Self.nested)
        #expect(summary.lastHomeEntry == 1.4 && summary.leftHome == nil)
    }

    @Test func withNoHomeKnownEveryStampIsElsewhere() {
        let ring = StampRing()
        ring.write(Stamp(entered: true, time: 1.0, site: Self.home))
        let summary = ring.drain(home: nil)
        #expect(summary.otherSite == Self.home && summary.lastHomeEntry == nil)
        // A stamp without user registers (the kernel's ABI none, a shorter record) names no
        // site, not even a home of zeros, and the stamp after it is read whole.
        ring.writeWithoutRegisters(entered: true, time: 1.1)
        ring.write(Stamp(entered: false, time: 1.2, site: Self.home))
        let bare = ring.drain(home: HomeWaitTracker.Site(pc: 0, sp: 0))
        #expect(bare.stamps == 2 && bare.lastHomeEntry == nil)
        #expect(bare.otherSite == HomeWaitTracker.Site(pc: 0, sp: 0) && bare.lastTime == 1.2 && !bare.lastEntered)
    }

    /// Whole milliseconds, which go through the kernel's nanoseconds and back unchanged.
    static func time(_ round: Int, _ index: Int) -> Double { Double(1000 * round + 10 * index + 500) / 1000 }

    @Test func stampsWrappingTheRingsEndAreReadWhole() {
        let ring = StampRing(dataPages: 1)
        // 48-byte stamps in one 4 KiB page: the second batch crosses the end.
        for round in 0..<3 {
            for index in 0..<60 {
                ring.write(Stamp(entered: index % 2 == 0, time: Self.time(round, index), site: Self.home))
            }
            let summary = ring.drain(home: Self.home)
            #expect(summary.stamps == 60 && !summary.lost && summary.otherSite == nil)
            #expect(summary.lastHomeEntry == Self.time(round, 58))
            #expect(summary.leftHome == Self.time(round, 59))
        }
    }

    @Test func aDroppedOrTornRingIsSaidLost() {
        let ring = StampRing()
        ring.writeLost()
        ring.write(Stamp(entered: true, time: 1.0, site: Self.home))
        let dropped = ring.drain(home: Self.home)
        #expect(dropped.lost && dropped.stamps == 1)
        ring.write(Stamp(entered: false, time: 1.1, site: Self.home))
        ring.writeTorn()
        let torn = ring.drain(home: Self.home)
        #expect(torn.lost && torn.stamps == 1)
        // The torn rest is skipped, not read again.
        #expect(ring.drain(home: Self.home).stamps == 0)
    }
}
