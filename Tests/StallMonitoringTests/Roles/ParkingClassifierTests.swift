import Testing

@testable import StallMonitoring
import StallDetection
import StallProc

/// Parking waits and what they show a process to be, from /proc syscall lines alone.
@Suite struct ParkingClassifierTests {
    static func call(_ number: Int, pc: UInt64 = 0x7f00_0000_1000, sp: UInt64 = 0x7ffd_0000_2000) -> ProcSyscallInfo {
        .inSyscall(number: number, arguments: [0, 0, 0, 0, 0, 0], sp: sp, pc: pc)
    }

    /// Only a blocked call parks: never a lock wait, never disk I/O; a sleep only when repeated.
    @Test func onlyBlockedCallsMayPark() {
        #expect(ParkingClassifier.parkingKind(number: 202, activity: .blockedCall) == .parkable)
        #expect(ParkingClassifier.parkingKind(number: 0, activity: .blockedCall) == .parkable)
        #expect(ParkingClassifier.parkingKind(number: 230, activity: .blockedCall) == .parkableWhenRepeated)
        #expect(ParkingClassifier.parkingKind(number: 202, activity: .lockWait) == .never)
        #expect(ParkingClassifier.parkingKind(number: 0, activity: .ioWait) == .never)
        #expect(ParkingClassifier.parkingKind(number: 1, activity: .blockedCall) == .never)
    }

    /// Commit 0c1b24e: a parking wait learnt before a loop wait appeared stays one; a call first
    /// seen once a loop is known is not learnt.
    @Test func aParkingWaitLearntBeforeALoopWaitIsKept() {
        var parking = ParkingClassifier(firstWaitIsParking: true)
        let queueGet = Self.call(202)
        let pipeRead = Self.call(0, pc: 0x7f00_0000_3000, sp: 0x7ffd_0000_4000)
        let first = parking.parked(in: queueGet, activity: .blockedCall, learning: true)
        #expect(first)
        let none = parking.parked(in: nil, activity: .running, learning: true)
        #expect(!none)
        let again = parking.parked(in: queueGet, activity: .blockedCall, learning: false)
        #expect(again)
        let unknown = parking.parked(in: pipeRead, activity: .blockedCall, learning: false)
        #expect(!unknown)
        // A new program learns afresh.
        parking.reset()
        let afterExec = parking.parked(in: queueGet, activity: .blockedCall, learning: false)
        #expect(!afterExec)
    }

    /// gunicorn 27's arbiter, first seen running: its timed queue get times out every second
    /// and is re-entered in microseconds, so every probe finds the same call with the same
    /// arguments. Time on the CPU between two probes says it was left and entered again: three
    /// entries park it. Without that evidence the same call is one long entry and never parks.
    @Test func aTimedWaitReenteredUnseenParksByItsCPUTime() {
        var arbiter = ParkingClassifier(firstWaitIsParking: true)
        let queueGet = Self.call(202)
        _ = arbiter.parked(in: nil, activity: .running, learning: true)
        var parked: [Bool] = []
        for _ in 0..<4 {
            parked.append(arbiter.parked(in: queueGet, activity: .blockedCall, learning: true, ran: true))
        }
        #expect(parked == [false, false, true, true])
        var stuck = ParkingClassifier(firstWaitIsParking: true)
        _ = stuck.parked(in: nil, activity: .running, learning: true)
        var stuckParked: [Bool] = []
        for _ in 0..<10 {
            stuckParked.append(stuck.parked(in: queueGet, activity: .blockedCall, learning: true, ran: false))
        }
        #expect(!stuckParked.contains(true))
    }

    @Test func parkedInSignalOrChildWaitsIsASupervisor() {
        var parking = ParkingClassifier(firstWaitIsParking: true)
        var childrenRead = 0
        parking.noteParked(in: Self.call(130)) {
            childrenRead += 1
            return ""
        }
        #expect(parking.parkedKind == .supervisor)
        #expect(childrenRead == 0)
        var waiting = ParkingClassifier(firstWaitIsParking: true)
        waiting.noteParked(in: Self.call(61)) { "" }
        #expect(waiting.parkedKind == .supervisor)
    }

    /// Elsewhere, children make a supervisor and none a helper; the first look decides.
    @Test func childrenMakeASupervisorAndNoneAHelper() {
        var master = ParkingClassifier(firstWaitIsParking: true)
        master.noteParked(in: Self.call(202)) { "1234 1235 " }
        #expect(master.parkedKind == .supervisor)

        var helper = ParkingClassifier(firstWaitIsParking: true)
        helper.noteParked(in: Self.call(0)) { "" }
        #expect(helper.parkedKind == .helper)
        helper.noteParked(in: Self.call(130)) { "99" }
        #expect(helper.parkedKind == .helper)
        helper.reset()
        #expect(helper.parkedKind == nil)
    }
}

/// A futex wait under a lock-acquire frame is lock contention unless what waits is a join, an
/// event or a queue: then it waits for another thread and may be a supervisor's parking wait.
@Suite struct WaitForAnotherTests {
    static func frames(_ innermostFirst: [(String, Bool)]) -> [SampledFrame] {
        innermostFirst.map { SampledFrame(function: $0.0, module: $0.1 ? "python" : "python3.11", language: $0.1 ? "python" : nil) }
    }

    @Test func aQueueWaitWrittenInCIsAWaitForAnother() {
        // gunicorn 27's arbiter: SimpleQueue.get(timeout=1.0), a C method with no Python frame.
        let arbiter = Self.frames([
            ("__futex_abstimed_wait_common", false), ("__new_sem_wait_slow64", false), ("PyThread_acquire_lock_timed", false),
            ("_queue_SimpleQueue_get_impl", false), ("_queue_SimpleQueue_get", false), ("Arbiter.wait_for_signals", true),
            ("Arbiter.run", true),
        ])
        #expect(LockHint.waitsForAnother(arbiter))
        let join = Self.frames([("PyThread_acquire_lock_timed", false), ("Thread._wait_for_tstate_lock", true), ("main", true)])
        #expect(LockHint.waitsForAnother(join))
        // A lock taken by work, and a SimpleQueue frame further out than the innermost Python
        // frame (the work's own lock, inside a task run by a queue consumer), are contention.
        let contended = Self.frames([
            ("PyThread_acquire_lock_timed", false), ("lock_PyThread_acquire_lock", false), ("update_cache", true),
            ("_queue_SimpleQueue_get", false), ("consume", true),
        ])
        #expect(!LockHint.waitsForAnother(contended))
    }
}
