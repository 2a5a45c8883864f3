import Testing

@testable import StallMonitoring
import StallProc

/// The engine's round with pipe-woken watches (see `WatchSchedulerTests.PipeWatch`): which
/// watches a round steps, which go to sleep, and what the round's end waits for. No process
/// is traced; the waits are real but short, with bounds a loaded machine keeps.
@Suite("WatchEngine")
struct WatchEngineTests {
    typealias PipeWatch = WatchSchedulerTests.PipeWatch

    @Test func aRoundStepsTheAwakeOnlyAndSleepsTheSettled() {
        let engine = WatchEngine<PipeWatch>(probeInterval: 0.01, start: MonotonicTime.seconds(), seed: 1)
        let idle = PipeWatch()
        let busy = PipeWatch()
        busy.settled = false
        let gone = PipeWatch()
        gone.alive = false
        for watch in [idle, busy, gone] { engine.add(watch) }
        let first = engine.step([idle, busy, gone], at: 0)
        #expect(first.stepped.map(\.read) == [idle.read, busy.read])
        #expect(first.gone.map(\.read) == [gone.read])
        #expect(idle.armed && !engine.scheduler.isAwake(idle))
        #expect(engine.scheduler.isAwake(busy))
        // The sleeper is left out of the next rounds, however many.
        engine.remove(gone)
        for round in 1...5 { _ = engine.step([idle, busy], at: Double(round)) }
        #expect(idle.steps == 1 && busy.steps == 6)
        // Its thread leaves the wait: the round's end wakes it, and the next round steps it.
        busy.settled = true
        _ = engine.step([idle, busy], at: 6)
        idle.wakeFromTheKernel()
        engine.endRound(at: 6, idleDeadline: MonotonicTime.seconds() + 5)
        #expect(engine.scheduler.isAwake(idle) && !idle.armed)
        _ = engine.step([idle, busy], at: 7)
        #expect(idle.steps == 2)
    }

    @Test func withEveryWatchAsleepTheRoundEndsAtTheDriversDeadline() {
        let engine = WatchEngine<PipeWatch>(probeInterval: 0.001, start: MonotonicTime.seconds(), seed: 2)
        let watch = PipeWatch()
        engine.add(watch)
        _ = engine.step([watch], at: 0)
        // Not the 1 ms probe tick: nothing is awake, so the wait lasts to the deadline.
        let start = MonotonicTime.seconds()
        engine.endRound(at: start, idleDeadline: start + 0.1)
        #expect(MonotonicTime.seconds() - start >= 0.095)
        #expect(!engine.scheduler.isAwake(watch))
    }

    @Test func withAWatchAwakeTheRoundEndsOnTheProbeTick() {
        let start = MonotonicTime.seconds()
        let engine = WatchEngine<PipeWatch>(probeInterval: 0.01, start: start, seed: 3)
        let busy = PipeWatch()
        busy.settled = false
        engine.add(busy)
        _ = engine.step([busy], at: start)
        // A far deadline is not waited for: the awake watch is probed on the round's pace.
        engine.endRound(at: start, idleDeadline: start + 30)
        #expect(MonotonicTime.seconds() - start < 5)
    }

    @Test func theDriversDescriptorEndsTheWaitAndIsReturned() {
        let engine = WatchEngine<PipeWatch>(probeInterval: 0.01, start: MonotonicTime.seconds(), seed: 4)
        let inbox = PipeWatch()  // stands for a listener or a keyboard
        inbox.wakeFromTheKernel()
        let ready = engine.endRound(at: MonotonicTime.seconds(), idleDeadline: MonotonicTime.seconds() + 30, extra: [inbox.read])
        #expect(ready.contains(inbox.read))
    }
}
