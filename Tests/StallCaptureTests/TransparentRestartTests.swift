import Testing

@testable import StallProc
@testable import StallCapture

/// The stop-and-copy fallback for a blocked thread whose stop-free copy cannot be unwound is
/// allowed only where the program cannot notice the stop.
@Suite struct TransparentRestartTests {
    func call(_ number: Int, fd: UInt64 = 3) -> ProcSyscallInfo {
        .inSyscall(number: number, arguments: [fd, 0, 0, 0, 0, 0], sp: 0x7ffc_0000_1000, pc: 0x7f00_0000_1000)
    }

    @Test func idleWaitsAndSignalWaitsAreNeverStopped() {
        for number in [232, 281, 441, 7, 271, 23, 270, 128, 34, 130] {  // epoll*, poll, ppoll, select, pselect6, rt_sigtimedwait, pause, rt_sigsuspend
            #expect(!TransparentRestart.allowsStop(call(number), fileKind: { _ in "pipe:[1]" }), "\(number)")
        }
    }

    @Test func sleepsLocksAndChildWaitsRestart() {
        for number in [35, 230, 202, 61, 247] {
            #expect(TransparentRestart.allowsStop(call(number), fileKind: { _ in nil }), "\(number)")
        }
    }

    @Test func readsRestartExceptOnSockets() {
        #expect(TransparentRestart.allowsStop(call(0), fileKind: { _ in "pipe:[42]" }))
        #expect(TransparentRestart.allowsStop(call(0), fileKind: { _ in "/dev/pts/1" }))
        #expect(!TransparentRestart.allowsStop(call(0), fileKind: { _ in "socket:[42]" }))
        #expect(!TransparentRestart.allowsStop(call(0), fileKind: { _ in nil }))
        #expect(!TransparentRestart.allowsStop(.running, fileKind: { _ in "pipe:[1]" }))
        #expect(!TransparentRestart.allowsStop(nil, fileKind: { _ in "pipe:[1]" }))
    }
}
