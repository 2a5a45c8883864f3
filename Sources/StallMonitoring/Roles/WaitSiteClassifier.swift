import StallDetection
import StallCapture
import StallProc
import StallReports

/// Whether a wait in the idle set is the loop's own (home) or one nested inside work, and what
/// the stack at a wait adds: a lock wait, the stack rule's loop frames, the user's
/// `--busy-frame` and `--idle-frame`. The same `epoll_wait` is a server at rest or a
/// `pg_sleep` in a backend (docs/architecture.md, "Detection model"), so this decides more
/// stalls than any other reading of /proc; apart from the monitor, its decisions are tested
/// without a process. A process that shows no loop wait may still park in a blocked call
/// (`ParkingClassifier`), learnt only while no loop is known.
struct WaitSiteClassifier {
    /// What the classifier reads of the watched thread: the monitor's inspector and probe
    /// files, or a fake in tests.
    protocol Target: AnyObject {
        /// The stack of the thread blocked in `syscall`, read without a stop (nil if it moved).
        func stopFreeStack(_ syscall: ProcSyscallInfo) -> UnwoundStack?
        /// Where the module mapping `address` starts (nil outside every module).
        func moduleStart(containing address: UInt64) -> UInt64?
        /// The function the symbol tables name at `address` (nil when none does).
        func functionName(at address: UInt64) -> String?
        /// The stack's frames named without source lines, as detection keeps them.
        func namedFrames(_ stack: UnwoundStack) -> [SampledFrame]
        /// The functions the stack's frames name without source lines (nil: unnamed).
        func frameFunctions(_ stack: UnwoundStack) -> [String?]
    }

    /// What one look at the thread's wait found.
    struct Look: Equatable {
        /// Home or nested, for a wait in the idle set (nil for anything else).
        var verdict: HomeWaitTracker.Verdict?
        /// Still asleep in the very same home wait as at the last look, with no turn since.
        var unchanged = false
        /// The stack rule's loop frames grew (`loopFrames`): the detector must take them.
        var learnedLoopFrames = false
    }

    /// Functions that wait for a lock through an idle-set wait.
    static let lockWaitFrames = ["ProcSleep", "WaitOnLock", "*LockAcquire*"]

    private let idleSyscalls: Set<Int>
    private let busyFramePatterns: [String]
    private let idleFramePatterns: [String]
    private(set) var homeWaits = HomeWaitTracker()
    private var lastWaitSite: HomeWaitTracker.Site?
    private var canonicalWaitSites: [HomeWaitTracker.Site: HomeWaitTracker.Site] = [:]
    private var lockWaitSites: Set<HomeWaitTracker.Site> = []
    /// Home waits whose stacks gave the stack rule its loop frames.
    private var learnedLoopSites: Set<HomeWaitTracker.Site> = []
    /// The stack rule's loop frames: every learnt home wait's stack.
    private(set) var loopFrames: [SampledFrame] = []
    private var lastHomeWait: (syscall: ProcSyscallInfo, site: HomeWaitTracker.Site)?
    /// The latest wait's raw site had not been seen before.
    private(set) var waitSiteIsNew = false
    private var busyFrameCache: (syscall: ProcSyscallInfo, busy: Bool)?
    /// Where a process with no event loop parks, and what that shows it to be.
    private var parking: ParkingClassifier

    /// `firstWaitIsParking`: see `ParkingWaitTracker`'s `trustsFirstLook`.
    init(idleSyscalls: Set<Int>, busyFramePatterns: [String], idleFramePatterns: [String], firstWaitIsParking: Bool = false) {
        self.idleSyscalls = idleSyscalls
        self.busyFramePatterns = busyFramePatterns
        self.idleFramePatterns = idleFramePatterns
        parking = ParkingClassifier(firstWaitIsParking: firstWaitIsParking)
    }

    /// True once a home wait is known: the thread runs an event loop.
    var knowsLoop: Bool { homeWaits.knowsLoop }

    /// Supervisor or helper, once the process was seen parked (see `ParkingClassifier`).
    var parkedKind: ProcessKind? { parking.parkedKind }

    /// What the process has shown itself to be (see `ProcessKind`). `countedTurns`: turns were
    /// counted by evidence better than the stack rule; `batch`: a batch watch.
    func kind(countedTurns: @autoclosure () -> Bool, batch: Bool) -> ProcessKind {
        // A master parked before any loop wait showed (uvicorn's, pinging its workers through
        // poll) stays a supervisor.
        if parkedKind == .supervisor { return .supervisor }
        if knowsLoop || countedTurns() { return .loop }
        if let parked = parkedKind { return parked }
        if batch { return .batch }
        return .busy
    }

    /// Whether the thread is in its parking wait (see `ParkingClassifier.parked`); new parking
    /// calls are learnt only while no loop is known.
    mutating func parked(in syscall: ProcSyscallInfo?, activity: ThreadActivity, ran: Bool) -> Bool {
        parking.parked(in: syscall, activity: activity, learning: !knowsLoop, ran: ran)
    }

    /// Found parked in `syscall` (see `ParkingClassifier.noteParked`).
    mutating func noteParked(in syscall: ProcSyscallInfo?, children: () -> String) {
        parking.noteParked(in: syscall, children: children)
    }

    /// The latest look found a wait under a lock-waiting function (see `lockWaitFrames`).
    var lastSiteWaitsForLock: Bool { lastWaitSite.map { lockWaitSites.contains($0) } == true }

    /// Home or nested, for a thread in `syscall`. `turned`: the loop turned since the last look.
    mutating func look(at syscall: ProcSyscallInfo, turned: Bool, evidence: LoopTurnEvidence, in target: Target) -> Look {
        // Still asleep in the very same home wait (same call, SP and PC; no turn since): the
        // verdict cannot have changed, and this is every probe of an idle watch.
        if !turned, let last = lastHomeWait, last.syscall == syscall, let site = lastWaitSite, site == last.site {
            waitSiteIsNew = false
            return Look(verdict: .home, unchanged: true)
        }
        lastHomeWait = nil
        // A wait site not seen before may be a new program's (an exec under the same name):
        // this probe reads the stat too.
        waitSiteIsNew = canonicalWaitSites[HomeWaitTracker.Site(pc: syscall.programCounter ?? 0, sp: syscall.stackPointer ?? 0)] == nil
        let look = lookUncached(syscall, turned: turned, evidence: evidence, in: target)
        if look.verdict == .home, let site = lastWaitSite,
            evidence != .stackRule || learnedLoopSites.contains(site)
        {
            lastHomeWait = (syscall, site)
        }
        return look
    }

    private mutating func lookUncached(_ syscall: ProcSyscallInfo, turned: Bool, evidence: LoopTurnEvidence, in target: Target) -> Look {
        guard let number = syscall.syscallNumber, idleSyscalls.contains(number),
            let sp = syscall.stackPointer, let pc = syscall.programCounter
        else {
            lastWaitSite = nil
            return Look(verdict: nil)
        }
        let (site, freshStack) = waitSite(raw: HomeWaitTracker.Site(pc: pc, sp: sp), syscall: syscall, in: target)
        let verdict = homeWaits.classify(site, newEntry: turned || lastWaitSite != site)
        lastWaitSite = site
        var learned = false
        if verdict == .home, evidence == .stackRule, !learnedLoopSites.contains(site),
            learnedLoopSites.count < 16, let stack = freshStack ?? target.stopFreeStack(syscall)
        {
            learnLoopFrames(site: site, stack: stack, in: target)
            learned = true
        }
        return Look(verdict: verdict, learnedLoopFrames: learned)
    }

    /// A wait's site is its caller outside the wrapper's library (return address and stack
    /// address of the first frame in another module), not the syscall instruction: glibc
    /// reaches one `syscall` instruction at two stack depths (single- vs multi-threaded
    /// cancellation path), and newer glibc adds frames of its own. Unwound once per raw
    /// (pc, sp), without a stop; the raw pair is the site when the unwind fails. Returns the
    /// stack too when it was unwound now, so the caller need not read it again.
    private mutating func waitSite(raw: HomeWaitTracker.Site, syscall: ProcSyscallInfo, in target: Target)
        -> (site: HomeWaitTracker.Site, freshStack: UnwoundStack?)
    {
        if let known = canonicalWaitSites[raw] { return (known, nil) }
        guard let stack = target.stopFreeStack(syscall) else { return (raw, nil) }
        let frames = stack.frames
        var site = raw
        if frames.count >= 2 {
            let wrapper = target.moduleStart(containing: frames[0].address)
            let caller =
                frames.dropFirst().first { target.moduleStart(containing: $0.address) != wrapper }
                ?? frames[1]
            site = HomeWaitTracker.Site(pc: caller.address, sp: caller.stackPointer)
        }
        if canonicalWaitSites.count > 4096 { canonicalWaitSites.removeAll() }
        canonicalWaitSites[raw] = site
        // A nested wait under a lock-waiting function (PostgreSQL's heavyweight locks sleep in
        // ProcSleep → WaitLatch → epoll_wait) is a lock wait, not just a blocked call.
        let names = stack.frames.enumerated().compactMap { index, frame -> String? in
            target.functionName(at: frame.lookupAddress(isInnermost: index == 0))
        }
        if names.contains(where: { name in Self.lockWaitFrames.contains { GlobPattern.matches($0, name) } }) {
            lockWaitSites.insert(site)
        }
        return (site, stack)
    }

    /// The stack rule's loop frames: the home wait's stack, once per home.
    private mutating func learnLoopFrames(site: HomeWaitTracker.Site, stack: UnwoundStack, in target: Target) {
        learnedLoopSites.insert(site)
        // Names only: loop frames are matched by name, module and address, never shown with lines.
        loopFrames += target.namedFrames(stack)
    }

    /// True when the blocked thread's stack has a function matching one of `patterns`.
    private func stackMatches(_ syscall: ProcSyscallInfo, _ patterns: [String], in target: Target) -> Bool {
        guard let stack = target.stopFreeStack(syscall) else { return false }
        return target.frameFunctions(stack).contains { function in
            guard let name = function else { return false }
            return patterns.contains { GlobPattern.matches($0, name) }
        }
    }

    /// `--busy-frame`: a wait whose stack names one of these functions is work. Kept while the
    /// thread stays in the same call, so the stack is read once per wait.
    mutating func isBusyByFrame(syscall: ProcSyscallInfo, in target: Target) -> Bool {
        if let cached = busyFrameCache, cached.syscall == syscall { return cached.busy }
        let busy = stackMatches(syscall, busyFramePatterns, in: target)
        busyFrameCache = (syscall, busy)
        return busy
    }

    /// A blocked thread is idle if its stack shows one of the user's idle frames (the
    /// monitor's `classify` keeps the answer while the thread stays in the call).
    func isIdleByFrame(syscall: ProcSyscallInfo, in target: Target) -> Bool {
        stackMatches(syscall, idleFramePatterns, in: target)
    }

    /// A capture found the thread in an idle-set wait at `raw`: true when that is a known home
    /// wait. Only sites already seen from /proc have a known caller; an unknown one is not home.
    func isKnownHome(raw: HomeWaitTracker.Site) -> Bool {
        canonicalWaitSites[raw].map { homeWaits.homes.contains($0) } ?? false
    }

    /// The loop went back to its wait between the probe and `snapshot`'s capture.
    func isBackInLoop(_ snapshot: ThreadSnapshot) -> Bool {
        var raw: HomeWaitTracker.Site?
        if let (number, _) = snapshot.interruptedSyscall, idleSyscalls.contains(number) {
            raw = HomeWaitTracker.Site(pc: snapshot.registers.pc, sp: snapshot.registers.sp)
        } else if let info = snapshot.syscall, let number = info.syscallNumber, idleSyscalls.contains(number),
            let sp = info.stackPointer, let pc = info.programCounter
        {
            raw = HomeWaitTracker.Site(pc: pc, sp: sp)
        }
        guard let raw else { return false }
        return isKnownHome(raw: raw)
    }

    /// A new program (an exec): none of the old one's wait sites, homes, loop frames or
    /// parking waits hold.
    mutating func reset() {
        canonicalWaitSites.removeAll()
        homeWaits = HomeWaitTracker()
        lastWaitSite = nil
        lastHomeWait = nil
        lockWaitSites.removeAll()
        learnedLoopSites.removeAll()
        loopFrames.removeAll()
        busyFrameCache = nil
        parking.reset()
    }
}
