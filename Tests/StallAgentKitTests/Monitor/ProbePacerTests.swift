import Testing

@testable import StallProc
@testable import StallMonitoring

#if canImport(Glibc)
import Glibc
#endif

/// The pace shared by the monitor, host agent and wrapper loops.
struct ProbePacerTests {
    /// The engine's wait on the clock alone: until the round `nextRoundDue` says.
    private func waitForNextRound(_ pacer: inout ProbePacer) {
        let wait = pacer.nextRoundDue() - MonotonicTime.seconds()
        if wait > 0 { usleep(useconds_t(wait * 1e6)) }
    }

    /// A loop held up far beyond its interval (a long capture) does not burst through the
    /// rounds it missed: it starts counting again from now.
    @Test func aLoopFarBehindRestartsInsteadOfBursting() {
        var pacer = ProbePacer(interval: 0.02, start: MonotonicTime.seconds() - 1, seed: 1)
        let before = MonotonicTime.seconds()
        waitForNextRound(&pacer)  // 1 s behind: no sleep, the schedule restarts from now
        #expect(MonotonicTime.seconds() - before < 0.015)
        let start = MonotonicTime.seconds()
        for _ in 0..<5 { waitForNextRound(&pacer) }
        // Five rounds of 16–24 ms each: never the back-to-back rounds of a catch-up.
        #expect(MonotonicTime.seconds() - start >= 5 * 0.016 - 0.002)
    }
}
