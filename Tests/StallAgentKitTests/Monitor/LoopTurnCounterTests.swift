import Foundation
import Testing

@testable import StallProc

#if canImport(Glibc)
import Glibc
#endif

/// The counters count only the waits they are given, and one more can join the group later:
/// the monitor counts the wait the loop was seen idle in, not all eight (each counter costs the
/// target at every context switch).
@Suite(.serialized) struct LoopTurnCounterTests {
    @Test(.enabled(if: geteuid() == 0 && (try? LoopTurnCounter.tracepointIDs()) != nil, "needs root and the syscall tracepoints (tracefs)"))
    func countsTheGivenWaitsAndTakesMoreLater() throws {
        // `idle` waits in epoll_wait; each SIGUSR1 wakes it for one turn (eintr=N).
        let fixture = try FixtureProcess(["idle"])
        defer { fixture.stop() }
        let counter = try LoopTurnCounter(tid: fixture.pid, waits: ["poll"])
        #expect(counter.counted == ["poll"])
        let before = try #require(counter.read())
        for _ in 0..<3 {
            fixture.signal(SIGUSR1)
            usleep(50_000)
        }
        #expect(counter.read() == before, "the loop's epoll_wait is not a counted wait")
        #expect(counter.count(wait: "epoll_wait"))
        #expect(!counter.count(wait: "epoll_wait"), "already counted")
        #expect(!counter.count(wait: "nanosleep"), "not a loop's wait")
        #expect(counter.counted == ["poll", "epoll_wait"])
        for _ in 0..<3 {
            fixture.signal(SIGUSR1)
            usleep(50_000)
        }
        let after = try #require(counter.read())
        #expect(after >= before + 3, "each wake-up is one more entry into epoll_wait: \(before) → \(after)")
        let all = try LoopTurnCounter(tid: fixture.pid)
        #expect(all.counted.count >= 2 && all.counted.contains("epoll_wait"), "\(all.counted)")
    }
}
