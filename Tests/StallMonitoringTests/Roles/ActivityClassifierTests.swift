import StallDetection
import StallProc
import Testing

@testable import StallMonitoring

/// A thread in the very same call is not classified again; --idle-frame turns a busy wait
/// idle; a frozen cgroup's `D` is stopped, the freezer read at most every quarter second.
@Suite struct ActivityClassifierTests {
    /// A clock, a freezer and descriptors the test sets, counting what is read.
    final class Fakes {
        var now = 0.0
        var frozen = false
        var freezerReads = 0
        var fileKindReads = 0

        func classifier(idleFrames: Bool = false) -> ActivityClassifier {
            ActivityClassifier(
                classifier: ThreadStateClassifier(), hasIdleFrames: idleFrames, clock: { self.now },
                readFrozen: {
                    self.freezerReads += 1
                    return self.frozen
                })
        }
        func fileKind(_ fd: Int) -> String? {
            fileKindReads += 1
            return fd == 3 ? "/var/lib/db/wal" : "socket:[1]"
        }
    }

    static func call(_ number: Int, _ first: UInt64 = 3) -> ProcSyscallInfo {
        .inSyscall(number: number, arguments: [first, 0, 0, 0, 0, 0], sp: 0x7ffd_0000, pc: 0x7f00_0000)
    }

    /// The same state and call give the last answer without reading the descriptor again;
    /// another call, another state or a forgotten one are classified afresh.
    @Test func theSameCallIsNotClassifiedAgain() {
        let fakes = Fakes()
        let activities = fakes.classifier()
        func classify(_ state: Character, _ syscall: ProcSyscallInfo?) -> ThreadActivity {
            activities.classify(state: state, syscall: syscall, fileKind: fakes.fileKind, idleByFrame: { _ in true })
        }
        #expect(classify("S", Self.call(0)) == .ioWait, "read(2) of a file")
        #expect(classify("S", Self.call(0)) == .ioWait)
        #expect(fakes.fileKindReads == 1)
        #expect(classify("S", Self.call(0, 4)) == .blockedCall, "read(2) of a socket")
        #expect(fakes.fileKindReads == 2)
        activities.forget()
        #expect(classify("S", Self.call(0, 4)) == .blockedCall)
        #expect(fakes.fileKindReads == 3, "forgotten: read again")
        #expect(classify("S", Self.call(232)) == .idle, "epoll_wait; --idle-frame not given")
        #expect(classify("R", .running) == .running)
        #expect(classify("D", .running) == .ioWait)
    }

    /// Only a busy wait (not running) is asked about its frames.
    @Test func anIdleFrameMakesABusyWaitIdle() {
        let fakes = Fakes()
        let activities = fakes.classifier(idleFrames: true)
        var asked: [ProcSyscallInfo] = []
        func classify(_ state: Character, _ syscall: ProcSyscallInfo?, idle: Bool) -> ThreadActivity {
            activities.classify(
                state: state, syscall: syscall, fileKind: fakes.fileKind,
                idleByFrame: {
                    asked.append($0)
                    return idle
                })
        }
        #expect(classify("S", Self.call(202), idle: true) == .idle, "a futex wait under an idle frame")
        #expect(classify("S", Self.call(61), idle: false) == .blockedCall, "wait4 elsewhere")
        #expect(classify("R", .running, idle: true) == .running)
        #expect(classify("S", Self.call(232), idle: true) == .idle)
        #expect(asked == [Self.call(202), Self.call(61)])
    }

    /// A thread in `D` in a frozen cgroup is stopped; the freezer's answer holds for a
    /// quarter second.
    @Test func aFrozenCgroupsDIsStopped() {
        let fakes = Fakes()
        let activities = fakes.classifier()
        func classify(_ syscall: ProcSyscallInfo) -> ThreadActivity {
            activities.classify(state: "D", syscall: syscall, fileKind: fakes.fileKind, idleByFrame: { _ in false })
        }
        fakes.frozen = true
        fakes.now = 10
        #expect(classify(.running) == .stopped)
        #expect(fakes.freezerReads == 1)
        // `D` outside a call is classified at every probe: the freezer is not read each time.
        fakes.frozen = false
        fakes.now = 10.2
        #expect(classify(.running) == .stopped)
        #expect(fakes.freezerReads == 1)
        fakes.now = 10.25
        #expect(classify(.running) == .ioWait)
        #expect(fakes.freezerReads == 2)
        // Not in `D`: the freezer is not asked.
        _ = activities.classify(state: "S", syscall: Self.call(0), fileKind: fakes.fileKind, idleByFrame: { _ in false })
        #expect(fakes.freezerReads == 2)
    }
}
