import Testing

@testable import StallDetection

/// Where a process with no event loop idles (issue 24): the call it was first seen in, or one
/// it re-enters from the same site; never a mutex, never a sleep first seen.
@Suite struct ParkingWaitTrackerTests {
    typealias Call = ParkingWaitTracker.Call
    let queueGet = Call(number: 202, pc: 0x7f00_0000_1000, sp: 0x7ffd_0000_2000)
    let pipeRead = Call(number: 0, pc: 0x7f00_0000_3000, sp: 0x7ffd_0000_4000)
    let handlerRead = Call(number: 0, pc: 0x7f00_0000_3000, sp: 0x7ffd_0000_1000)
    let sleep = Call(number: 230, pc: 0x7f00_0000_5000, sp: 0x7ffd_0000_6000)

    /// The resource tracker: found in read() at the agent's first look, there for life.
    @Test func theCallFirstSeenIsTheParkingWait() {
        var tracker = ParkingWaitTracker()
        let parked1 = tracker.observe(pipeRead, kind: .parkable, newEntry: true)
        #expect(parked1)
        for _ in 0..<100 {
            let parked2 = tracker.observe(pipeRead, kind: .parkable, newEntry: false)
            #expect(parked2)
        }
        // Another read, deeper (a handler's), is not.
        let parked3 = tracker.observe(handlerRead, kind: .parkable, newEntry: true)
        #expect(!parked3)
        #expect(tracker.knowsParking)
    }

    /// gunicorn's arbiter first seen between two of its waits: it parks once it has re-entered
    /// the same call a few times.
    @Test func aCallReenteredFromOneSiteBecomesTheParkingWait() {
        var tracker = ParkingWaitTracker()
        let parked4 = tracker.observe(nil, kind: .never, newEntry: true)
        #expect(!parked4)
        for entry in 1...ParkingWaitTracker.reentriesToPark {
            let parked = tracker.observe(queueGet, kind: .parkable, newEntry: true)
            #expect(parked == (entry == ParkingWaitTracker.reentriesToPark))
            let parked5 = tracker.observe(nil, kind: .never, newEntry: true)
            #expect(!parked5)
        }
        let parked6 = tracker.observe(queueGet, kind: .parkable, newEntry: true)
        #expect(parked6)
    }

    /// Seen many times without leaving, a call is entered once.
    @Test func stayingInACallIsOneEntry() {
        var tracker = ParkingWaitTracker()
        _ = tracker.observe(nil, kind: .never, newEntry: true)
        for _ in 0..<50 {
            let parked7 = tracker.observe(queueGet, kind: .parkable, newEntry: false)
            #expect(!parked7)
        }
    }

    /// A process found asleep may be a stall in progress; a helper that sleeps again and again
    /// from one call parks there. A mutex never parks.
    @Test func sleepsParkOnlyWhenRepeatedAndMutexesNever() {
        var tracker = ParkingWaitTracker()
        let parked8 = tracker.observe(sleep, kind: .parkableWhenRepeated, newEntry: true)
        #expect(!parked8)
        _ = tracker.observe(nil, kind: .never, newEntry: true)
        let parked9 = tracker.observe(sleep, kind: .parkableWhenRepeated, newEntry: true)
        #expect(!parked9)
        _ = tracker.observe(nil, kind: .never, newEntry: true)
        let parked10 = tracker.observe(sleep, kind: .parkableWhenRepeated, newEntry: true)
        #expect(parked10)
        var found = ParkingWaitTracker()
        let parked11 = found.observe(queueGet, kind: .never, newEntry: true)
        #expect(!parked11)
        for _ in 0..<5 {
            let parked12 = found.observe(queueGet, kind: .never, newEntry: true)
            #expect(!parked12)
            _ = found.observe(nil, kind: .never, newEntry: true)
        }
        #expect(!found.knowsParking)
    }

    /// Where the first look is not trusted (a single `--pid`), only re-entries park.
    @Test func withoutTheFirstLookOnlyReentriesPark() {
        var tracker = ParkingWaitTracker(trustsFirstLook: false)
        let first = tracker.observe(pipeRead, kind: .parkable, newEntry: true)
        #expect(!first)
        #expect(!tracker.knowsParking)
    }

    /// uvicorn's master: parked in `Event.wait(0.5)` first, then seen in a worker ping's poll
    /// (a loop wait, so the monitor stops learning). Its parking wait stays one; nothing new is
    /// learnt, however often re-entered.
    @Test func aParkingWaitLearntBeforeALoopStaysAndNothingNewIsLearnt() {
        var tracker = ParkingWaitTracker()
        let first = tracker.observe(queueGet, kind: .parkable, newEntry: true)
        #expect(first)
        for _ in 0..<10 {
            _ = tracker.observe(nil, kind: .never, newEntry: true, learning: false)
            let again = tracker.observe(queueGet, kind: .parkable, newEntry: true, learning: false)
            #expect(again)
            let sleeping = tracker.observe(sleep, kind: .parkableWhenRepeated, newEntry: true, learning: false)
            #expect(!sleeping)
        }
        #expect(tracker.parkingCalls == [queueGet])
    }

    /// An exec starts a new first look.
    @Test func resetForgetsEverything() {
        var tracker = ParkingWaitTracker()
        _ = tracker.observe(pipeRead, kind: .parkable, newEntry: true)
        tracker.reset()
        #expect(!tracker.knowsParking)
        let parked13 = tracker.observe(handlerRead, kind: .parkable, newEntry: true)
        #expect(parked13)
    }
}
