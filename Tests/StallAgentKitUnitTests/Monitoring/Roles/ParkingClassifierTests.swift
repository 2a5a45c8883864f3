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
