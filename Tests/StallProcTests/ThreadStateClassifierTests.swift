import Testing

@testable import StallProc

@Suite struct ThreadStateClassifierTests {
    let classifier = ThreadStateClassifier()

    func call(_ number: Int, _ args: [UInt64] = [0, 0, 0, 0, 0, 0]) -> ProcSyscallInfo {
        .inSyscall(number: number, arguments: args, sp: 0x7ffd0000, pc: 0x7f000000)
    }

    @Test func idleWaits() {
        for number in [232, 281, 441, 7, 271, 23, 270] {
            #expect(classifier.classify(state: "S", syscall: call(number)).activity == .idle)
        }
        #expect(ThreadStateClassifier(extraIdleSyscalls: [0]).classify(state: "S", syscall: call(0, [3, 0, 0, 0, 0, 0])).activity == .idle)
    }

    @Test func schedulerStates() {
        #expect(classifier.classify(state: "R", syscall: .running).activity == .running)
        #expect(classifier.classify(state: "T", syscall: call(232)).activity == .stopped)
        #expect(classifier.classify(state: "t", syscall: nil).activity == .stopped)
        #expect(classifier.classify(state: "Z", syscall: nil).activity == .gone)
        #expect(classifier.classify(state: "D", syscall: call(74)).activity == .ioWait)
        #expect(classifier.classify(state: "D", syscall: call(232)).activity == .ioWait)
    }

    @Test func futexKinds() {
        let mutex = classifier.classify(state: "S", syscall: call(202, [0x5000, 0x80, 2, 0, 0, 0]))
        #expect(mutex.activity == .lockWait)
        #expect(mutex.futexAddress == 0x5000)
        // pthread_mutex_timedlock: FUTEX_WAIT_BITSET|PRIVATE|CLOCK_REALTIME (0x189), value 2.
        let timed = classifier.classify(state: "S", syscall: call(202, [0x6000, 0x189, 2, 0, 0, 0]))
        #expect(timed.activity == .lockWait)
        #expect(timed.futexAddress == 0x6000)
        let condvar = classifier.classify(state: "S", syscall: call(202, [0x5000, 0x189, 0, 0, 0, 0xffffffff]))
        #expect(condvar.activity == .blockedCall)
        #expect(condvar.futexAddress == nil)
        #expect(classifier.classify(state: "S", syscall: call(202, [0x5000, 0x86, 0, 0, 0, 0])).activity == .lockWait)
    }

    @Test func fileLocksAndIO() {
        #expect(classifier.classify(state: "S", syscall: call(73, [3, 2, 0, 0, 0, 0])).activity == .lockWait)
        #expect(classifier.classify(state: "S", syscall: call(72, [3, 7, 0, 0, 0, 0])).activity == .lockWait)
        #expect(classifier.classify(state: "S", syscall: call(74)).activity == .ioWait)
        let fileRead = classifier.classify(state: "S", syscall: call(0, [5, 0, 0, 0, 0, 0]), fileKind: { _ in "/var/data" })
        #expect(fileRead.activity == .ioWait)
        let pipeRead = classifier.classify(state: "S", syscall: call(0, [5, 0, 0, 0, 0, 0]), fileKind: { _ in "pipe:[123]" })
        #expect(pipeRead.activity == .blockedCall)
        #expect(pipeRead.detail == "blocked in read (pipe:[123])")
        #expect(classifier.classify(state: "S", syscall: call(230)).activity == .blockedCall)
    }
}
