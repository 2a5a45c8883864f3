import Testing

@testable import StallMonitoring
import StallProc

#if canImport(Glibc)
import Glibc
#endif

/// The engine's scheduler with watches whose wake-up is a pipe: writing to the pipe is the
/// thread leaving its wait. No process is traced.
@Suite("WatchScheduler")
struct WatchSchedulerTests {
    final class PipeWatch: SteppableWatch {
        let read: Int32
        let write: Int32
        /// false: not settled (arming refused, keep probing).
        var settled = true
        var armed = false
        var armCalls = 0
        /// false: its target is gone (`step` says so).
        var alive = true
        var steps = 0
        var wakeLabel: String { "pipe[\(read)]" }

        init() {
            var fds: [Int32] = [0, 0]
            _ = pipe(&fds)
            (read, write) = (fds[0], fds[1])
        }
        deinit {
            close(read)
            close(write)
        }
        func armWakeUp() -> Int32? {
            armCalls += 1
            guard settled else { return nil }
            armed = true
            return read
        }
        func disarmWakeUp() {
            armed = false
            var byte: UInt8 = 0
            // Drain, as disarming a perf event forgets its record.
            while poll(read, timeout: 0) { _ = Glibc.read(read, &byte, 1) }
        }
        func step(at now: Double) -> Bool {
            steps += 1
            return alive
        }
        func wakeFromTheKernel() {
            var byte: UInt8 = 1
            _ = Glibc.write(write, &byte, 1)
        }
        private func poll(_ fd: Int32, timeout: Int32) -> Bool {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            return Glibc.poll(&entry, 1, timeout) > 0
        }
    }

    /// A scheduler with one watch, put to sleep.
    private func oneAsleep() -> (WatchScheduler<PipeWatch>, PipeWatch) {
        let scheduler = WatchScheduler<PipeWatch>()
        let watch = PipeWatch()
        scheduler.add(watch)
        scheduler.trySleep(watch)
        return (scheduler, watch)
    }

    @Test func aSettledWatchSleepsUntilItsDescriptorWakesIt() {
        let scheduler = WatchScheduler<PipeWatch>()
        let a = PipeWatch()
        let b = PipeWatch()
        scheduler.add(a)
        scheduler.add(b)
        #expect(scheduler.isAwake(a) && scheduler.isAwake(b))
        #expect(scheduler.trySleep(a))
        #expect(scheduler.trySleep(b))
        #expect(scheduler.awakeCount == 0 && scheduler.asleepCount == 2)
        // Nothing happens: the wait lasts until its deadline, and nobody wakes.
        let start = MonotonicTime.seconds()
        scheduler.wait(until: start + 0.05)
        #expect(MonotonicTime.seconds() - start >= 0.045)
        #expect(scheduler.awakeCount == 0)
        // b's thread leaves its wait: the wait ends at once and b alone is awake, disarmed.
        b.wakeFromTheKernel()
        let woken = MonotonicTime.seconds()
        scheduler.wait(until: woken + 5)
        #expect(MonotonicTime.seconds() - woken < 2)
        #expect(scheduler.isAwake(b) && !b.armed)
        #expect(!scheduler.isAwake(a) && a.armed)
        #expect(scheduler.sleeps == 2 && scheduler.wakes == 1)
    }

    @Test func aWatchThatCannotArmStaysAwake() {
        let scheduler = WatchScheduler<PipeWatch>()
        let busy = PipeWatch()
        busy.settled = false
        scheduler.add(busy)
        #expect(!scheduler.trySleep(busy))
        #expect(scheduler.isAwake(busy) && scheduler.awakeCount == 1)
        // Asleep ones are not asked again: arming happens once per sleep, not per round.
        let idle = PipeWatch()
        scheduler.add(idle)
        scheduler.trySleep(idle)
        scheduler.trySleep(idle)
        #expect(idle.armCalls == 1)
    }

    @Test func removingASleepingWatchDisarmsIt() {
        let (scheduler, watch) = oneAsleep()
        #expect(watch.armed)
        scheduler.remove(watch)
        #expect(!watch.armed && scheduler.asleepCount == 0 && scheduler.awakeCount == 0)
        // Its descriptor is no longer polled: a late wake-up is not taken for anyone's.
        watch.wakeFromTheKernel()
        let start = MonotonicTime.seconds()
        scheduler.wait(until: start + 0.03)
        #expect(scheduler.awakeCount == 0)
    }

    @Test func anExtraDescriptorEndsTheWaitAndIsReturned() {
        let (scheduler, sleeper) = oneAsleep()
        let inbox = PipeWatch()  // stands for the signal inbox
        inbox.wakeFromTheKernel()
        let ready = scheduler.wait(until: MonotonicTime.seconds() + 5, extra: [inbox.read])
        #expect(ready == [inbox.read])
        #expect(!scheduler.isAwake(sleeper))
    }

    @Test func aWakeByHandDisarms() {
        let (scheduler, watch) = oneAsleep()
        scheduler.wake(watch)
        #expect(scheduler.isAwake(watch) && !watch.armed)
    }
}
