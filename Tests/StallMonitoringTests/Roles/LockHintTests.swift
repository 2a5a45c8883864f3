import StallDetection
import StallProc
import Testing

@testable import StallMonitoring

/// A futex wait under a lock-acquiring frame is a lock wait while the thread stays in that
/// very call; a join's or a queue's lock is not.
@Suite struct LockHintTests {
    static func futex(pc: UInt64 = 0x7f00_0000_1000) -> ProcSyscallInfo {
        .inSyscall(number: 202, arguments: [0, 0, 0, 0, 0, 0], sp: 0x7ffd_0000_2000, pc: pc)
    }
    static func frames(_ innermostFirst: [(String, Bool)]) -> [SampledFrame] {
        innermostFirst.map { SampledFrame(function: $0.0, module: $0.1 ? "python" : "python3.11", language: $0.1 ? "python" : nil) }
    }
    static let contended = frames([("PyThread_acquire_lock_timed", false), ("update_cache", true)])

    @Test func aLockAcquireInAFutexWaitHoldsForThatCallOnly() {
        var hint = LockHint()
        hint.learn(activity: .blockedCall, syscall: Self.futex(), frames: Self.contended)
        #expect(hint.syscall == Self.futex())
        #expect(hint.holds(in: Self.futex()))
        #expect(!hint.holds(in: Self.futex(pc: 0x7f00_0000_2000)), "another call")
        #expect(!hint.holds(in: nil))
        // Already a lock wait by /proc: kept as well.
        hint.learn(activity: .lockWait, syscall: Self.futex(), frames: Self.contended)
        #expect(hint.holds(in: Self.futex()))
    }

    /// Any other sample drops it: not a futex, not blocked, no lock frame, or a join.
    @Test func otherSamplesDropIt() {
        var hint = LockHint()
        let read = ProcSyscallInfo.inSyscall(number: 0, arguments: [0, 0, 0, 0, 0, 0], sp: 1, pc: 2)
        for (activity, syscall, frames) in [
            (ThreadActivity.blockedCall, read, Self.contended),
            (.running, Self.futex(), Self.contended),
            (.blockedCall, Self.futex(), Self.frames([("__futex_abstimed_wait_common", false), ("work", true)])),
            (.blockedCall, Self.futex(), Self.frames([("PyThread_acquire_lock_timed", false), ("Thread.join", true)])),
        ] {
            hint.learn(activity: .blockedCall, syscall: Self.futex(), frames: Self.contended)
            #expect(hint.holds(in: Self.futex()))
            hint.learn(activity: activity, syscall: syscall, frames: frames)
            #expect(hint.syscall == nil)
            #expect(!hint.holds(in: syscall))
        }
        hint.learn(activity: .blockedCall, syscall: Self.futex(), frames: Self.contended)
        hint.learn(activity: .blockedCall, syscall: nil, frames: Self.contended)
        #expect(hint.syscall == nil, "a sample without a syscall line")
    }
}
