import Testing

@testable import StallMonitoring

/// A compiled descendant found late in a batch watch is dated from its birth, once; an
/// interpreter, a process found at its start, or a watch outside the batch rule is not.
@Suite struct WatchStartTests {
    @Test func aCompiledDescendantFoundLateIsDatedFromItsBirth() {
        var start = WatchStart(age: 0.4, joinedAfterStart: true, batch: true, mainModule: { "test_binary" })
        #expect(start.time == 0)
        start.begin(at: 100)
        #expect(start.time == 100)
        let born = start.takeBirth()
        #expect(born == 99.6)
        let again = start.takeBirth()
        #expect(again == nil, "given to the first step only")
    }

    @Test func othersAreDatedFromTheirFirstProbe() {
        func birth(age: Double? = 0.4, joined: Bool = true, batch: Bool = true, module: String? = "test_binary") -> Double? {
            var start = WatchStart(age: age, joinedAfterStart: joined, batch: batch, mainModule: { module })
            start.begin(at: 100)
            return start.takeBirth()
        }
        #expect(birth() == 99.6)
        #expect(birth(module: "python3.12") == nil, "an interpreter's start-up is not its first test's")
        #expect(birth(module: nil) == nil, "no module known")
        #expect(birth(joined: false) == nil)
        #expect(birth(batch: false) == nil)
        #expect(birth(age: nil) == nil, "its age could not be read")
    }

    /// The module is looked up only for a descendant found late in a batch watch.
    @Test func theModuleIsReadOnlyWhenItMatters() {
        var lookups = 0
        _ = WatchStart(
            age: 1, joinedAfterStart: false, batch: true,
            mainModule: {
                lookups += 1
                return "a"
            })
        _ = WatchStart(
            age: 1, joinedAfterStart: true, batch: false,
            mainModule: {
                lookups += 1
                return "a"
            })
        #expect(lookups == 0)
    }
}
