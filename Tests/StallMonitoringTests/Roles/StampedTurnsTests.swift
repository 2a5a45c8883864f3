import StallDetection
import StallProc
import Testing

@testable import StallMonitoring

/// When the kernel's wait stamps let a round leave a thread's probe out, and what the probe
/// that follows takes from them (`StampedTurns`), with stamps written by hand.
@Suite struct StampedTurnsTests {
    static let home = HomeWaitTracker.Site(pc: 0x7f00_1000, sp: 0x7ffd_1000)
    static let nested = HomeWaitTracker.Site(pc: 0x7f00_1000, sp: 0x7ffb_0000)
    static let margin = 0.02

    typealias Stamp = WaitStampSummary.Stamp

    static func entry(_ time: Double, at site: HomeWaitTracker.Site = home) -> Stamp { Stamp(entered: true, time: time, site: site) }
    static func exit(_ time: Double, at site: HomeWaitTracker.Site = home) -> Stamp { Stamp(entered: false, time: time, site: site) }

    /// A glance as the watch makes it: the drain added up against the home it knows.
    static func glance(
        _ turns: inout StampedTurns, _ stamps: [Stamp], at now: Double, lost: Bool = false, episodeOpen: Bool = false,
        mayGlance: Bool = true
    ) -> Bool {
        turns.take(WaitStampSummary(stamps, home: turns.home, lost: lost), isHome: { $0 == home })
        return turns.needsStep(at: now, margin: margin, mayGlance: mayGlance, episodeOpen: episodeOpen)
    }

    /// After a step, stamps at the home site learnt on the first drain.
    static func started(at now: Double = 1.0) -> StampedTurns {
        var turns = StampedTurns()
        // The first drain meets home as "another site": it asks, learns it, and probes.
        #expect(glance(&turns, [entry(now - 0.005)], at: now))
        _ = turns.beginStep(at: now, isHome: { $0 == home })
        return turns
    }

    @Test func aLoopTurningThroughItsHomeWaitIsNotProbed() {
        var turns = Self.started()
        #expect(!Self.glance(&turns, [Self.exit(1.001), Self.entry(1.002), Self.exit(1.004), Self.entry(1.006)], at: 1.01))
        // A turn in progress, younger than the margin: left out too.
        #expect(!Self.glance(&turns, [Self.exit(1.012)], at: 1.02))
        // The same turn, older than the margin: probed, and the probe learns when it began.
        #expect(Self.glance(&turns, [], at: 1.035))
        let atStep = turns.beginStep(at: 1.035, isHome: { $0 == Self.home })
        #expect(atStep == StampedTurns.AtStep(lastHomeEntry: 1.006, leftHome: 1.012))
    }

    @Test func aNestedWaitOrAnUnknownSiteIsProbed() {
        var turns = Self.started()
        // pg_sleep: out of the home wait, into WaitLatch's epoll_wait deeper in the stack.
        #expect(Self.glance(&turns, [Self.exit(1.001), Self.entry(1.002, at: Self.nested)], at: 1.01))
        let atStep = turns.beginStep(at: 1.01, isHome: { $0 == Self.home })
        #expect(atStep.leftHome == 1.001, "the stall is dated from its exit from home")
    }

    @Test func lostStampsOrNoneAtAllAreProbed() {
        var turns = Self.started()
        #expect(Self.glance(&turns, [Self.exit(1.001), Self.entry(1.002)], at: 1.01, lost: true))
        #expect(turns.beginStep(at: 1.01, isHome: { $0 == Self.home }) == StampedTurns.AtStep(), "nothing taken from a story with gaps")
        #expect(Self.glance(&turns, [], at: 1.02), "no stamp since the last probe: only a probe can say")
    }

    @Test func aThreadQuietInItsWaitIsLeftToSettleAfterAWhile() {
        var turns = Self.started()
        #expect(!Self.glance(&turns, [Self.exit(1.001), Self.entry(1.002)], at: 1.01))
        #expect(!Self.glance(&turns, [], at: 1.2), "stamped in its wait, quiet for less than sleepAfter")
        #expect(Self.glance(&turns, [], at: 1.002 + StampedTurns.sleepAfter), "quiet long enough: the probe lets it sleep")
    }

    @Test func aThreadBackInItsWaitIsLookedAtLessOftenButNeverPastItsProbes() {
        var turns = Self.started()
        #expect(!Self.glance(&turns, [Self.exit(1.001), Self.entry(1.002)], at: 1.01))
        #expect(turns.nextGlance(after: 1.01, every: 0.03) == 1.04, "in its wait: looked at again 3 rounds on")
        // A turn in progress: every round, so that it is probed once older than the margin.
        #expect(!Self.glance(&turns, [Self.exit(1.045)], at: 1.05))
        #expect(turns.nextGlance(after: 1.05, every: 0.03) == 1.05)
        // Never past the half-second probe (the last step was at 1.0) nor the time to settle.
        #expect(!Self.glance(&turns, [Self.entry(1.48)], at: 1.49))
        #expect(turns.nextGlance(after: 1.49, every: 0.03) == 1.0 + StampedTurns.stepAtLeastEvery)
        // A thread that filled much of its ring since the last look: every round.
        var fast = Self.started()
        let many = (0..<30).flatMap { turn in [Self.exit(1.001 + Double(turn) * 0.0002), Self.entry(1.0011 + Double(turn) * 0.0002)] }
        #expect(!Self.glance(&fast, many, at: 1.01))
        #expect(fast.nextGlance(after: 1.01, every: 0.03) == 1.01)
        var quiet = Self.started()
        #expect(!Self.glance(&quiet, [Self.exit(1.001), Self.entry(1.002)], at: 1.01))
        #expect(!Self.glance(&quiet, [], at: 1.49))
        #expect(quiet.nextGlance(after: 1.49, every: 0.03) == 1.0 + StampedTurns.stepAtLeastEvery)
    }

    /// Judged over a quarter of a second of steps and glances: a backend turning hundreds of
    /// times a second is not slept on; one that went quiet, or a helper ticking 5 times a
    /// second, is.
    @Test func aThreadTurningBrisklyIsNotSleptOnAndAQuietOrSlowOneIs() {
        var turns = Self.started()
        var now = 1.0
        // 300 turns a second, stepped every 50 ms (two probes that found it settled).
        for _ in 0..<8 {
            let stamps = (0..<15).flatMap { turn in
                let at = now + Double(turn) / 300
                return [Self.exit(at), Self.entry(at + 0.001)]
            }
            now += 0.05
            _ = Self.glance(&turns, stamps, at: now)
            _ = turns.beginStep(at: now, isHome: { $0 == Self.home })
        }
        #expect(turns.turnsBriskly)
        // Quiet for half a second: judged again, no longer brisk.
        now += 0.5
        _ = Self.glance(&turns, [], at: now)
        _ = turns.beginStep(at: now, isHome: { $0 == Self.home })
        #expect(!turns.turnsBriskly)
        // A helper turning 5 times a second.
        var helper = Self.started()
        now = 1.0
        for _ in 0..<10 {
            now += 0.2
            _ = Self.glance(&helper, [Self.exit(now - 0.002), Self.entry(now - 0.001)], at: now)
            _ = helper.beginStep(at: now, isHome: { $0 == Self.home })
            #expect(!helper.turnsBriskly)
        }
    }

    @Test func aProbeAtLeastEveryHalfSecondAndNoneLeftOutWhenTheWatchForbidsIt() {
        var turns = Self.started()
        var now = 1.0
        var left = 0
        while now < 1.0 + StampedTurns.stepAtLeastEvery + 0.05 {
            now += 0.01
            if !Self.glance(&turns, [Self.exit(now - 0.004), Self.entry(now - 0.002)], at: now) { left += 1 } else { break }
        }
        #expect(left > 0 && now <= 1.0 + StampedTurns.stepAtLeastEvery + 0.011, "probed again within \(StampedTurns.stepAtLeastEvery) s")
        var batch = Self.started()
        #expect(Self.glance(&batch, [Self.exit(1.001), Self.entry(1.002)], at: 1.01, mayGlance: false))
    }

    /// An episode a probe opened is probed every round: the probe ends it at the stamped entry.
    @Test func anOpenEpisodeIsAlwaysProbedAndEndsAtTheStampedEntry() {
        var turns = Self.started()
        #expect(Self.glance(&turns, [Self.exit(1.001)], at: 1.005, episodeOpen: true))
        _ = turns.beginStep(at: 1.005, isHome: { $0 == Self.home })
        #expect(Self.glance(&turns, [Self.entry(1.008)], at: 1.015, episodeOpen: true))
        #expect(turns.beginStep(at: 1.015, isHome: { $0 == Self.home }).lastHomeEntry == 1.008)
    }

    @Test func aHomeThatStopsBeingHomeIsAskedAgain() {
        var turns = Self.started()
        _ = turns.beginStep(at: 1.01, isHome: { _ in false })
        #expect(turns.home == nil)
    }
}
