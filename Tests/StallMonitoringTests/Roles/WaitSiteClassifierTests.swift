import Testing

@testable import StallMonitoring
import StallCapture
import StallDetection
import StallProc

/// Home and nested waits, lock waits, loop frames and the frame rules, told from a fake
/// thread whose stacks the test writes.
@Suite struct WaitSiteClassifierTests {
    static let libc: UInt64 = 0x7f00_0000_0000
    static let app: UInt64 = 0x40_0000
    static let epollWait = ProcSyscallInfo.number(ofSyscall: "epoll_wait")!
    static let read = ProcSyscallInfo.number(ofSyscall: "read")!

    final class FakeThread: WaitSiteClassifier.Target {
        /// The stack a stop-free read gives, by the syscall's stack pointer (none: it moved).
        var stacks: [UInt64: UnwoundStack] = [:]
        /// Function names by lookup address.
        var functions: [UInt64: String] = [:]
        var stackReads = 0

        func stopFreeStack(_ syscall: ProcSyscallInfo) -> UnwoundStack? {
            stackReads += 1
            return syscall.stackPointer.flatMap { stacks[$0] }
        }
        func moduleStart(containing address: UInt64) -> UInt64? { address >= libc ? libc : app }
        func functionName(at address: UInt64) -> String? { functions[address] }
        func namedFrames(_ stack: UnwoundStack) -> [SampledFrame] {
            stack.frames.enumerated().map { index, frame in
                SampledFrame(
                    function: functions[frame.lookupAddress(isInnermost: index == 0)] ?? "?",
                    module: frame.address >= libc ? "libc.so.6" : "app", address: frame.address, cfa: frame.stackPointer)
            }
        }
        func frameFunctions(_ stack: UnwoundStack) -> [String?] {
            stack.frames.enumerated().map { index, frame in functions[frame.lookupAddress(isInnermost: index == 0)] }
        }

        /// A wait in libc's `epoll_wait` at stack pointer `sp`, called through libc's wrapper
        /// from the program's `callers` (innermost first: function, return address, stack address).
        func wait(sp: UInt64, callers: [(String, UInt64, UInt64)], number: Int = epollWait) -> ProcSyscallInfo {
            let pc = libc + 0x1000
            functions[pc] = "epoll_wait"
            functions[libc + 0x2000 - 1] = "__GI_epoll_wait"
            var frames = [
                UnwoundFrame(address: pc, stackPointer: sp, isSignalFrame: false),
                UnwoundFrame(address: libc + 0x2000, stackPointer: sp + 0x40, isSignalFrame: false),
            ]
            for (name, address, stackAddress) in callers {
                functions[address - 1] = name
                frames.append(UnwoundFrame(address: address, stackPointer: stackAddress, isSignalFrame: false))
            }
            stacks[sp] = UnwoundStack(frames: frames, end: .complete)
            return .inSyscall(number: number, arguments: [0, 0, 0, 0, 0, 0], sp: sp, pc: pc)
        }
    }

    static func classifier(busy: [String] = [], idle: [String] = []) -> WaitSiteClassifier {
        WaitSiteClassifier(idleSyscalls: [epollWait], busyFramePatterns: busy, idleFramePatterns: idle)
    }

    /// The first idle wait is home; its site is the program's caller, not libc's syscall
    /// instruction, so the same call is home however glibc reaches it. Unwound once per raw
    /// site; asleep there again with no turn, it is the same home (what the wake-up arms on).
    @Test func theFirstWaitIsHomeAndItsSiteIsTheCallerOutsideLibc() {
        let thread = FakeThread()
        var sites = Self.classifier()
        let home = thread.wait(sp: 0x7ffd_1000, callers: [("main_loop", Self.app + 0x1234, 0x7ffd_1100)])
        let first = sites.look(at: home, turned: false, evidence: .kernelCounter, in: thread)
        #expect(first == .init(verdict: .home))
        #expect(sites.waitSiteIsNew)
        #expect(sites.knowsLoop)
        #expect(sites.isKnownHome(raw: HomeWaitTracker.Site(pc: Self.libc + 0x1000, sp: 0x7ffd_1000)))
        #expect(sites.homeWaits.homes == [HomeWaitTracker.Site(pc: Self.app + 0x1234, sp: 0x7ffd_1100)])
        let again = sites.look(at: home, turned: false, evidence: .kernelCounter, in: thread)
        #expect(again == .init(verdict: .home, unchanged: true))
        #expect(!sites.waitSiteIsNew)
        // After a turn it is looked at anew, from the known site: no second unwind.
        let turned = sites.look(at: home, turned: true, evidence: .kernelCounter, in: thread)
        #expect(turned == .init(verdict: .home))
        #expect(!sites.waitSiteIsNew)
        #expect(thread.stackReads == 1)
    }

    /// A wait deeper than home (PostgreSQL's `WaitLatch` under `ProcSleep`) is nested, and a
    /// lock wait when a lock-waiting function is on its stack; one without is not.
    @Test func aDeeperWaitIsNestedAndUnderProcSleepALockWait() {
        let thread = FakeThread()
        var sites = Self.classifier()
        let home = thread.wait(sp: 0x7ffd_1000, callers: [("ServerLoop", Self.app + 0x1234, 0x7ffd_1100)])
        _ = sites.look(at: home, turned: false, evidence: .kernelCounter, in: thread)
        let lock = thread.wait(
            sp: 0x7ffc_0000,
            callers: [("WaitLatch", Self.app + 0x5678, 0x7ffc_0100), ("ProcSleep", Self.app + 0x9abc, 0x7ffc_0200)])
        let lockLook = sites.look(at: lock, turned: false, evidence: .kernelCounter, in: thread)
        #expect(lockLook.verdict == .nested)
        #expect(sites.lastSiteWaitsForLock)
        #expect(!sites.isKnownHome(raw: HomeWaitTracker.Site(pc: Self.libc + 0x1000, sp: 0x7ffc_0000)))
        let sleep = thread.wait(sp: 0x7ffb_0000, callers: [("pg_sleep", Self.app + 0x4444, 0x7ffb_0100)])
        let sleepLook = sites.look(at: sleep, turned: false, evidence: .kernelCounter, in: thread)
        #expect(sleepLook.verdict == .nested)
        #expect(!sites.lastSiteWaitsForLock)
        // Back home.
        let backHome = sites.look(at: home, turned: true, evidence: .kernelCounter, in: thread)
        #expect(backHome.verdict == .home)
        #expect(!sites.lastSiteWaitsForLock)
    }

    /// Calls outside the idle set, and a thread on a CPU, have no verdict and read no stack.
    @Test func onlyIdleSetWaitsHaveAVerdict() {
        let thread = FakeThread()
        var sites = Self.classifier()
        let read = thread.wait(sp: 0x7ffd_1000, callers: [("main", Self.app + 0x1234, 0x7ffd_1100)], number: Self.read)
        let readLook = sites.look(at: read, turned: false, evidence: .kernelCounter, in: thread)
        #expect(readLook.verdict == nil)
        let runningLook = sites.look(at: .running, turned: false, evidence: .kernelCounter, in: thread)
        #expect(runningLook.verdict == nil)
        #expect(!sites.knowsLoop)
        #expect(thread.stackReads == 0)
    }

    /// With the stack rule, a home's stack becomes loop frames, once per home; until it has,
    /// the home is looked at anew every probe (no shortcut).
    @Test func theStackRuleLearnsEachHomesFramesOnce() {
        let thread = FakeThread()
        var sites = Self.classifier()
        let home = thread.wait(sp: 0x7ffd_1000, callers: [("uv_run", Self.app + 0x1234, 0x7ffd_1100)])
        let first = sites.look(at: home, turned: false, evidence: .stackRule, in: thread)
        #expect(first == .init(verdict: .home, learnedLoopFrames: true))
        #expect(sites.loopFrames.map(\.function) == ["epoll_wait", "__GI_epoll_wait", "uv_run"])
        // The stack unwound for the site served the loop frames too.
        #expect(thread.stackReads == 1)
        let again = sites.look(at: home, turned: false, evidence: .stackRule, in: thread)
        #expect(again == .init(verdict: .home, unchanged: true))
        #expect(sites.loopFrames.count == 3)

        // A home whose stack cannot be read is learnt at a later look that can.
        var unread = Self.classifier()
        let moving = FakeThread()
        let syscall = moving.wait(sp: 0x7ffd_2000, callers: [("uv_run", Self.app + 0x1234, 0x7ffd_2100)])
        let stack = moving.stacks.removeValue(forKey: 0x7ffd_2000)
        let unreadLook = unread.look(at: syscall, turned: false, evidence: .stackRule, in: moving)
        #expect(unreadLook == .init(verdict: .home))
        #expect(unread.loopFrames.isEmpty)
        moving.stacks[0x7ffd_2000] = stack
        // Not unchanged: with the stack rule the shortcut waits for the loop frames.
        let later = unread.look(at: syscall, turned: false, evidence: .stackRule, in: moving)
        #expect(later.learnedLoopFrames)
        #expect(!later.unchanged)
    }

    /// `--busy-frame` reads the stack once per wait; `--idle-frame` matches the user's frames.
    @Test func frameRulesMatchTheStacksFunctions() {
        let thread = FakeThread()
        var sites = Self.classifier(busy: ["compute_*"], idle: ["*wait_for_job"])
        let busy = thread.wait(sp: 0x7ffd_1000, callers: [("compute_hash", Self.app + 0x1234, 0x7ffd_1100)])
        let busyFirst = sites.isBusyByFrame(syscall: busy, in: thread)
        #expect(busyFirst)
        let busyAgain = sites.isBusyByFrame(syscall: busy, in: thread)
        #expect(busyAgain)
        #expect(thread.stackReads == 1)
        let other = thread.wait(sp: 0x7ffd_3000, callers: [("pool_wait_for_job", Self.app + 0x5678, 0x7ffd_3100)])
        let otherBusy = sites.isBusyByFrame(syscall: other, in: thread)
        #expect(!otherBusy)
        #expect(thread.stackReads == 2)
        #expect(sites.isIdleByFrame(syscall: other, in: thread))
        #expect(!sites.isIdleByFrame(syscall: busy, in: thread))
        // A stack that cannot be read matches nothing.
        thread.stacks = [:]
        #expect(!sites.isIdleByFrame(syscall: other, in: thread))
    }

    /// An exec: the old program's homes, sites and loop frames are forgotten.
    @Test func resetForgetsTheOldProgram() {
        let thread = FakeThread()
        var sites = Self.classifier()
        let home = thread.wait(sp: 0x7ffd_1000, callers: [("main_loop", Self.app + 0x1234, 0x7ffd_1100)])
        _ = sites.look(at: home, turned: false, evidence: .stackRule, in: thread)
        #expect(sites.knowsLoop)
        sites.reset()
        #expect(!sites.knowsLoop)
        #expect(sites.loopFrames.isEmpty)
        #expect(!sites.isKnownHome(raw: HomeWaitTracker.Site(pc: Self.libc + 0x1000, sp: 0x7ffd_1000)))
        let look = sites.look(at: home, turned: false, evidence: .stackRule, in: thread)
        #expect(look == .init(verdict: .home, learnedLoopFrames: true))
        #expect(sites.waitSiteIsNew)
        #expect(thread.stackReads == 2)
    }
}

/// Parking, as the wait-site classifier holds it: learnt only while no loop wait is known,
/// and forgotten with the old program.
extension WaitSiteClassifierTests {
    @Test func parkingIsLearntOnlyWhileNoLoopIsKnown() {
        let thread = FakeThread()
        var sites = WaitSiteClassifier(idleSyscalls: [Self.epollWait], busyFramePatterns: [], idleFramePatterns: [], firstWaitIsParking: true)
        let queueGet = ParkingClassifierTests.call(202)
        let pipeRead = ParkingClassifierTests.call(0, pc: 0x7f00_0000_3000, sp: 0x7ffd_0000_4000)
        let first = sites.parked(in: queueGet, activity: .blockedCall, ran: false)
        #expect(first, "trusted at the first look")
        sites.noteParked(in: queueGet) { "" }
        #expect(sites.parkedKind == .helper, "no children")
        let home = thread.wait(sp: 0x7ffd_1000, callers: [("main_loop", Self.app + 0x1234, 0x7ffd_1100)])
        _ = sites.look(at: home, turned: false, evidence: .kernelCounter, in: thread)
        #expect(sites.knowsLoop)
        let unknown = sites.parked(in: pipeRead, activity: .blockedCall, ran: false)
        #expect(!unknown, "a call first seen once a loop is known is not learnt")
        let again = sites.parked(in: queueGet, activity: .blockedCall, ran: false)
        #expect(again, "one learnt before is kept")
        sites.reset()
        #expect(sites.parkedKind == nil)
        let afterExec = sites.parked(in: queueGet, activity: .blockedCall, ran: false)
        #expect(afterExec, "a new program with no loop known learns afresh")
    }

    /// Without `firstWaitIsParking`, the first look is not trusted (see `ParkingWaitTracker`).
    @Test func theFirstLookIsTrustedOnlyWhenAsked() {
        var sites = Self.classifier()
        let first = sites.parked(in: ParkingClassifierTests.call(202), activity: .blockedCall, ran: false)
        #expect(!first)
    }
}

/// What the process has shown itself to be, from its wait sites, its parking and its turns.
extension WaitSiteClassifierTests {
    @Test func theKindIsWhatTheWaitsShowed() {
        let thread = FakeThread()
        var sites = WaitSiteClassifier(idleSyscalls: [Self.epollWait], busyFramePatterns: [], idleFramePatterns: [], firstWaitIsParking: true)
        #expect(sites.kind(countedTurns: false, batch: false) == .busy)
        #expect(sites.kind(countedTurns: false, batch: true) == .batch)
        #expect(sites.kind(countedTurns: true, batch: true) == .loop, "turns counted by a counter or the probe")
        // Parked in a call with no children: a helper, unless a loop shows.
        let pipeRead = ParkingClassifierTests.call(0)
        _ = sites.parked(in: pipeRead, activity: .blockedCall, ran: false)
        sites.noteParked(in: pipeRead) { "" }
        #expect(sites.kind(countedTurns: false, batch: true) == .helper)
        #expect(sites.kind(countedTurns: true, batch: false) == .loop)
        let home = thread.wait(sp: 0x7ffd_1000, callers: [("main_loop", Self.app + 0x1234, 0x7ffd_1100)])
        _ = sites.look(at: home, turned: false, evidence: .kernelCounter, in: thread)
        #expect(sites.kind(countedTurns: false, batch: false) == .loop)
        // A supervisor parked before its loop wait showed stays one.
        var master = WaitSiteClassifier(idleSyscalls: [Self.epollWait], busyFramePatterns: [], idleFramePatterns: [], firstWaitIsParking: true)
        let sigsuspend = ParkingClassifierTests.call(130)
        master.noteParked(in: sigsuspend) { "" }
        _ = master.look(at: home, turned: false, evidence: .kernelCounter, in: thread)
        #expect(master.knowsLoop)
        var asked = false
        let kind = master.kind(
            countedTurns: {
                asked = true
                return true
            }(), batch: false)
        #expect(kind == .supervisor)
        #expect(!asked, "turns are not asked about once the kind is known")
    }
}
