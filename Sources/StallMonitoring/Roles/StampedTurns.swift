import StallDetection
import StallProc

/// What the kernel's wait stamps (`LoopTurnCounter.drainStamps`) say of a thread between two
/// probes, so that one that keeps turning through its home wait is not probed every round
/// (docs/architecture.md, "Wait stamps"). Under load nothing in a family sleeps: every backend
/// of a PostgreSQL under pgbench turns several times a round, and probing each was most of the
/// agent's cost. The stamps say the same from memory, with the kernel's times.
///
/// A round may leave the probe out only when every stamp since the last probe is at a known
/// home site, none was lost, and either the last one is an entry (back in its wait, and it
/// turned since the last look) or an exit less than `margin` ago (a turn in progress, too young
/// to matter). The probe that follows takes when the turn that ended last ended and when the
/// one in progress began from the stamps, so an episode opens and closes at the kernel's times,
/// not at the probes'. Each stamp is looked at once, as it arrives: a thread left unprobed for
/// half a second has hundreds. Pure: tested with stamps written by hand.
struct StampedTurns {
    /// What the stamps since the last step add up to.
    private(set) var sinceStep = AtStep()
    /// No stamp since the last step.
    private var none = true
    /// Stamps were dropped since the last step (the kernel's ring was full).
    private(set) var lost = false
    /// A stamp since the last step was at a site not known as home (a nested wait, or one not
    /// classified yet): only a probe can say what it was.
    private(set) var strange = false
    /// The last stamp: an entry (true) or an exit, and when.
    private var last: (entered: Bool, time: Double)?
    /// Stamps came in at the latest drain, and how many.
    private var fresh = false
    private var lastDrained = 0
    private var lastStep = -Double.infinity
    /// The last site found home: almost every stamp of a loop is at it.
    private var knownHome: HomeWaitTracker.Site?
    /// Stamps since `rateSince`, the start of the window the turn rate is judged over.
    private var rateStamps = 0
    private var rateSince: Double?
    /// The thread turned at least `briskStampsPerSecond` / 2 times a second over the last
    /// window (see `beginStep`).
    private(set) var turnsBriskly = false

    /// A probe at least this often whatever the stamps say: the identity check, loop health
    /// lines and the family's look for new children ride on it.
    static let stepAtLeastEvery = 0.5
    /// How long a thread may sit in its home wait, stamped there, before a probe lets it go to
    /// sleep: putting to sleep and waking cost two perf ioctls (an interrupt to the thread's
    /// CPU) and the probe files' reopening, more than glancing at its stamps for a while.
    static let sleepAfter = 0.5
    /// A thread stamped this often (entries and exits) is not put to sleep when two probes
    /// happen to find it settled: it would wake within milliseconds, and sleeping and waking
    /// it (two perf ioctls, each an interrupt to its CPU, and its probe files reopened) cost
    /// more than glancing at its stamps. PostgreSQL under `pgbench -S -c 50`: backends whose
    /// pgbench thread was descheduled for a couple of rounds slept and woke 55 times a second,
    /// an eighth of the agent's time. A slow ticker (a helper waking every 200 ms) still sleeps:
    /// it lets the engine sleep too.
    static let briskStampsPerSecond = 40.0
    /// Stamps at one drain past which the ring (170 stamps, `sa_perf_tracepoint_stamper`) is
    /// drained every round.
    static let drainedForEveryRound = 40
    /// The window the rate is judged over (across steps, sleeps and glances).
    static let rateWindow = 0.25

    /// What a step takes from the stamps since the last one.
    struct AtStep: Equatable {
        /// When the thread last entered its home wait (the turn before ended then).
        var lastHomeEntry: Double?
        /// When it left its home wait after that, if it has not entered it again since.
        var leftHome: Double?
    }

    /// The home site the drain adds stamps up against: the last one found home.
    var home: HomeWaitTracker.Site? { knownHome }

    /// One drain's stamps, added up against `home`; `isHome`: a raw site is a known home
    /// wait's (asked only of a stamp at another site).
    mutating func take(_ drained: WaitStampSummary, isHome: (HomeWaitTracker.Site) -> Bool) {
        fresh = drained.stamps > 0
        lastDrained = drained.stamps
        rateStamps += drained.stamps
        guard drained.stamps > 0 || drained.lost else { return }
        none = none && drained.stamps == 0
        if drained.lost { lost = true }
        if let time = drained.lastTime { last = (drained.lastEntered, time) }
        if let other = drained.otherSite {
            // Stamps at another site were not added up: a probe says what they were. A site
            // that is home after all (the first drain, a second home) is added up next time.
            strange = true
            if isHome(other) { knownHome = other }
        }
        if let entry = drained.lastHomeEntry {
            sinceStep.lastHomeEntry = entry
            sinceStep.leftHome = drained.leftHome
        } else if let left = drained.leftHome {
            sinceStep.leftHome = left
        }
    }

    /// Whether the thread needs its probe this round. `mayGlance`: the watch allows it (no
    /// batch rule, nothing waiting to be written); `episodeOpen`: the detector has a busy
    /// episode open. That is probed every round, as without stamps: only a probe ends it (at
    /// the stamped entry, when there is one), says it in time and samples it.
    func needsStep(at now: Double, margin: Double, mayGlance: Bool, episodeOpen: Bool) -> Bool {
        guard mayGlance, !episodeOpen, !lost, !strange, !none, now - lastStep < Self.stepAtLeastEvery, let last else { return true }
        // In its wait: nothing to probe while the stamps keep coming, and none after a quiet
        // `sleepAfter`, when the probe lets it settle and sleep on its wake-up.
        if last.entered { return !fresh && now - last.time >= Self.sleepAfter }
        return now - last.time >= margin
    }

    /// When the stamps need looking at again, after a round that left the probe out at `now`:
    /// in its wait (the last stamp an entry), a thread can only begin a turn, which its exit
    /// stamp dates to the kernel's time; seen `every` later it is still seen long before any
    /// threshold, and glancing at every round was a third of a busy family's cost. Never later
    /// than the half-second probe or the time it may settle. A turn in progress is looked at
    /// every round (`now`): it is probed once it is older than the margin.
    func nextGlance(after now: Double, every: Double) -> Double {
        // A thread that filled a good part of its ring since the last look (170 stamps) would
        // overflow it in three rounds: looked at every round, as before.
        guard let last, last.entered, lastDrained < Self.drainedForEveryRound else { return now }
        return min(now + every, lastStep + Self.stepAtLeastEvery, max(now, last.time + Self.sleepAfter))
    }

    /// A step begins at `now`: what the stamps since the last one say (nothing when some were
    /// lost), and they are taken.
    mutating func beginStep(at now: Double, isHome: (HomeWaitTracker.Site) -> Bool) -> AtStep {
        defer {
            if let last, now - last.time >= Self.rateWindow {
                // Not a stamp for a whole window: quiet now, whatever the window before said.
                turnsBriskly = false
                rateSince = now
                rateStamps = 0
            } else if let since = rateSince, now - since >= Self.rateWindow {
                turnsBriskly = Double(rateStamps) >= Self.briskStampsPerSecond * (now - since)
                rateSince = now
                rateStamps = 0
            } else if rateSince == nil {
                rateSince = now
                rateStamps = 0
            }
            // The last probe may have changed which sites are home (a shallower wait demotes
            // the others).
            if let site = knownHome, !isHome(site) { knownHome = nil }
            sinceStep = AtStep()
            none = true
            lost = false
            strange = false
            fresh = false
            lastStep = now
        }
        return lost ? AtStep() : sinceStep
    }

    /// A probe found the thread in its home wait at `site`: the stamps are added up against it
    /// from now on. Learnt from the stamps alone, a thread whose first stamps were its stall's
    /// (a new backend whose counters opened after its first query) had no home when the stall
    /// ended, and the end was dated by the probe (a `pg_sleep(2)` said as 2.03–2.06 s).
    mutating func learnHome(_ site: HomeWaitTracker.Site) {
        knownHome = site
    }

    /// A new program (an exec): its home sites are not the old one's.
    mutating func forgetSites() {
        knownHome = nil
    }
}
