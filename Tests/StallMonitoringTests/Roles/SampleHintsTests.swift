import StallDetection
import StallProc
import Testing

@testable import StallMonitoring

/// What the latest sample's hints make of /proc's reading: I/O for a running thread in file
/// I/O, a lock wait for a blocked one in the very call a lock acquire was sampled in, and
/// nothing for anything else.
@Suite struct SampleHintsTests {
    static let futex = LockHintTests.futex()
    static func fileKind(_ fd: Int) -> String? { fd == 3 ? "/var/lib/db/wal" : nil }

    @Test func noHintsSayNothing() {
        let hints = SampleHints()
        for activity in [ThreadActivity.running, .blockedCall, .idle, .lockWait, .ioWait, .stopped, .gone] {
            #expect(hints.correction(of: activity, in: Self.futex) == nil)
        }
    }

    @Test func fileIOMakesARunningThreadInIO() {
        var hints = SampleHints()
        hints.io.learn(interruptedSyscall: (1, 3), stopped: true, fileKind: Self.fileKind)
        #expect(hints.correction(of: .running, in: .running) == .ioWait)
        #expect(hints.correction(of: .blockedCall, in: Self.futex) == nil, "only a running thread")
        #expect(hints.correction(of: .idle, in: nil) == nil)
        hints.io.clear()
        #expect(hints.correction(of: .running, in: .running) == nil)
    }

    @Test func aLockAcquireMakesTheSameBlockedCallALockWait() {
        var hints = SampleHints()
        hints.lock.learn(activity: .blockedCall, syscall: Self.futex, frames: LockHintTests.contended)
        #expect(hints.correction(of: .blockedCall, in: Self.futex) == .lockWait)
        #expect(hints.correction(of: .blockedCall, in: LockHintTests.futex(pc: 0x7f00_0000_2000)) == nil, "another call")
        #expect(hints.correction(of: .running, in: Self.futex) == nil)
        // File I/O is asked first: a thread cannot be both running and blocked.
        hints.io.learn(interruptedSyscall: (1, 3), stopped: true, fileKind: Self.fileKind)
        #expect(hints.correction(of: .running, in: .running) == .ioWait)
        #expect(hints.correction(of: .blockedCall, in: Self.futex) == .lockWait)
    }
}
