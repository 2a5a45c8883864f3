import Testing

@testable import StallMonitoring

/// Stat once a second, the maps every 30 s (or when stat moved), a half-read identity again
/// every `ProgramIdentity.settleSpacing`: the looks the agent makes at a program's identity.
@Suite struct IdentityCheckScheduleTests {
    @Test func theCheckIsOnceASecondFromTheStart() {
        var schedule = IdentityCheckSchedule()
        schedule.begin(at: 100)
        #expect(!schedule.checkDue(at: 100.5))
        #expect(!schedule.checked, "no check before the first second")
        #expect(schedule.checkDue(at: 101))
        schedule.didCheck(at: 101.2)
        #expect(schedule.checked)
        #expect(!schedule.checkDue(at: 102.1))
        #expect(schedule.checkDue(at: 102.2))
    }

    /// The maps are due at the first check, then 30 s after each re-reading.
    @Test func theMapsAreDueEveryThirtySeconds() {
        var schedule = IdentityCheckSchedule()
        schedule.begin(at: 100)
        #expect(schedule.mapsDue(at: 101))
        schedule.mapsChecked(at: 101)
        #expect(!schedule.mapsDue(at: 102))
        #expect(!schedule.mapsDue(at: 130.9))
        #expect(schedule.mapsDue(at: 131))
    }

    /// Only with re-reads left, and spaced.
    @Test func aHalfReadIdentityIsSettledSpaced() {
        var schedule = IdentityCheckSchedule()
        let noneLeft = schedule.settleDue(at: 5, readsLeft: 0)
        #expect(!noneLeft)
        let first = schedule.settleDue(at: 5, readsLeft: 3)
        #expect(first)
        let tooSoon = schedule.settleDue(at: 5 + ProgramIdentity.settleSpacing / 2, readsLeft: 2)
        #expect(!tooSoon)
        let spaced = schedule.settleDue(at: 5 + ProgramIdentity.settleSpacing, readsLeft: 2)
        #expect(spaced)
        let exhausted = schedule.settleDue(at: 10, readsLeft: 0)
        #expect(!exhausted, "none left")
    }
}
