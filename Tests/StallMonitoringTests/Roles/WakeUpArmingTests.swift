import StallProc
import Testing

@testable import StallMonitoring

/// Issue 14: the agent sleeps on a thread only once it is settled in its wait, and never
/// through a wait that ended between the step and the arming.
@Suite struct WakeUpArmingTests {
    final class FakeWaker: WakeUpArming.Waker {
        let fd: Int32 = 42
        var accepts = true
        var armed = false
        var exit: Double?
        var disarms = 0

        func arm() -> Bool {
            armed = accepts
            return accepts
        }
        func firstExit() -> Double? { exit }
        func disarm() {
            armed = false
            disarms += 1
        }
    }

    static func call(_ number: Int, pc: UInt64 = 0x7f00_0000_1000) -> ProcSyscallInfo {
        .inSyscall(number: number, arguments: [0, 0, 0, 0, 0, 0], sp: 0x7ffd_0000_2000, pc: pc)
    }

    static func arming(_ waker: FakeWaker) -> WakeUpArming {
        WakeUpArming(openWaker: { waker })
    }

    /// A home wait seen unchanged is slept on; the descriptor is the waker's, left armed.
    @Test func armsOnAnUnchangedHomeWait() {
        let waker = FakeWaker()
        let arming = Self.arming(waker)
        let epoll = Self.call(232)
        arming.beginStep()
        #expect(arming.arm(eligible: true, counterUnchanged: { true }, syscall: { epoll }) == nil, "nothing settled yet")
        arming.noteUnchangedWait(epoll)
        #expect(arming.arm(eligible: true, counterUnchanged: { true }, syscall: { epoll }) == 42)
        #expect(waker.armed)
        // A new step forgets it until the probe says so again.
        arming.beginStep()
        #expect(arming.settledIn == nil)
    }

    /// Not while an episode is open, the watch is over, or no module check ran.
    @Test func notWhenIneligible() {
        let waker = FakeWaker()
        let arming = Self.arming(waker)
        let epoll = Self.call(232)
        arming.noteUnchangedWait(epoll)
        #expect(arming.arm(eligible: false, counterUnchanged: { true }, syscall: { epoll }) == nil)
        #expect(!waker.armed)
    }

    /// Parked in the very same call at two steps in a row is settled; once, or in another
    /// call, is not.
    @Test func parkedTwiceInTheSameCallIsSettled() {
        let arming = Self.arming(FakeWaker())
        let sigsuspend = Self.call(130)
        arming.beginStep()
        arming.noteParked(in: sigsuspend)
        #expect(arming.lastParked == sigsuspend)
        #expect(arming.settledIn == nil, "parked once")
        arming.beginStep()
        #expect(arming.lastParked == nil)
        arming.noteParked(in: Self.call(130, pc: 0x7f00_0000_9000))
        #expect(arming.settledIn == nil, "another call site")
        arming.beginStep()
        arming.noteParked(in: Self.call(130, pc: 0x7f00_0000_9000))
        #expect(arming.settledIn == Self.call(130, pc: 0x7f00_0000_9000))
        // A step in between that found it elsewhere breaks the run.
        arming.beginStep()
        arming.beginStep()
        arming.noteParked(in: Self.call(130, pc: 0x7f00_0000_9000))
        #expect(arming.settledIn == nil)
    }

    /// A wait left between the step and the arming (another call now, or a turn counted) is
    /// not slept through: the waker is disarmed again.
    @Test func aWaitLeftBeforeTheArmingIsNotSleptThrough() {
        let waker = FakeWaker()
        let arming = Self.arming(waker)
        let epoll = Self.call(232)
        arming.noteUnchangedWait(epoll)
        #expect(arming.arm(eligible: true, counterUnchanged: { true }, syscall: { .running }) == nil)
        #expect(!waker.armed)
        #expect(waker.disarms == 1)
        #expect(arming.arm(eligible: true, counterUnchanged: { false }, syscall: { epoll }) == nil)
        #expect(waker.disarms == 2)
        // The kernel refusing to arm: nothing to disarm, keep probing.
        waker.accepts = false
        #expect(arming.arm(eligible: true, counterUnchanged: { true }, syscall: { epoll }) == nil)
        #expect(waker.disarms == 2)
    }

    /// A waker the kernel refuses is asked for once, not at every step.
    @Test func aRefusedWakerIsNotAskedAgain() {
        var opens = 0
        let arming = WakeUpArming(openWaker: {
            opens += 1
            throw LoopTurnCounter.Unavailable.noTracepoints
        })
        let epoll = Self.call(232)
        arming.noteUnchangedWait(epoll)
        #expect(arming.arm(eligible: true, counterUnchanged: { true }, syscall: { epoll }) == nil)
        #expect(arming.arm(eligible: true, counterUnchanged: { true }, syscall: { epoll }) == nil)
        #expect(opens == 1)
    }

    /// Disarming keeps when the thread left its wait, handed out once.
    @Test func theLeftWaitTimeIsTakenOnce() {
        let waker = FakeWaker()
        let arming = Self.arming(waker)
        let epoll = Self.call(232)
        arming.disarm()
        #expect(arming.takeLeftWait() == nil, "never armed")
        arming.noteUnchangedWait(epoll)
        _ = arming.arm(eligible: true, counterUnchanged: { true }, syscall: { epoll })
        waker.exit = 12.5
        arming.disarm()
        #expect(!waker.armed)
        #expect(arming.takeLeftWait() == 12.5)
        #expect(arming.takeLeftWait() == nil)
    }

    /// Settled but not to be slept on yet: armed to record, no descriptor; the next step reads
    /// when the thread left and disarms; unsettled, nothing is armed.
    @Test func aSettledThreadNotYetSleptOnIsRecorded() {
        let waker = FakeWaker()
        let arming = Self.arming(waker)
        let epoll = Self.call(232)
        arming.beginStep()
        arming.noteUnchangedWait(epoll)
        #expect(arming.arm(eligible: false, recordOnly: true, counterUnchanged: { true }, syscall: { epoll }) == nil)
        #expect(waker.armed, "recording")
        waker.exit = 3.25
        arming.beginStep()
        #expect(!waker.armed)
        #expect(arming.takeLeftWait() == 3.25)
        #expect(arming.arm(eligible: false, recordOnly: true, counterUnchanged: { true }, syscall: { epoll }) == nil)
        #expect(!waker.armed, "not settled at this step")
        // A wait left before the arming: nothing recorded.
        arming.noteUnchangedWait(epoll)
        #expect(arming.arm(eligible: false, recordOnly: true, counterUnchanged: { true }, syscall: { .running }) == nil)
        #expect(!waker.armed)
        arming.beginStep()
        #expect(arming.takeLeftWait() == nil)
    }
}
