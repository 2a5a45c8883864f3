import StallProc

/// A watch the engine can step: one probe (and, when due, one sample) per call; false once
/// its target is gone.
public protocol SteppableWatch: WakeableWatch {
    @discardableResult
    func step(at now: Double) -> Bool
    /// False when this round may leave the watch's probe out: what the kernel stamped since
    /// the last one says all a probe would (see `StampedTurns`).
    func needsStep(at now: Double) -> Bool
}

extension SteppableWatch {
    public func needsStep(at now: Double) -> Bool { true }
}

/// The one loop core behind every way of watching (docs/architecture.md, "The engine"): a lone
/// monitor (`StallMonitor.run`), the host agent (`--pid`, `--unit`, `--config`) and the command
/// wrapper (`-- COMMAND`) each add their own work to a round — targets to attach to, a child to
/// reap, signals to forward — and leave stepping, sleeping and waiting to this.
///
/// A round steps the awake watches only; a watch found settled in its wait goes to sleep on
/// its wake-up. The round's end waits for the next round's tick while any watch is awake,
/// else for the driver's next deadline (housekeeping, a discovery, the end), a sleeper waking,
/// a signal (the `SignalInbox`) or one of the driver's own descriptors — nothing runs on a
/// fixed beat while every thread sleeps.
public final class WatchEngine<Watch: SteppableWatch> {
    public let scheduler = WatchScheduler<Watch>()
    private var pacer: ProbePacer
    /// Whether the last wait was on the pacer's tick (some watch awake).
    private var probing = true

    public init(probeInterval: Double, start: Double, seed: UInt64) {
        pacer = ProbePacer(interval: probeInterval, start: start, seed: seed)
    }

    /// A new watch starts awake.
    public func add(_ watch: Watch) { scheduler.add(watch) }

    /// Forgets a watch, disarming its wake-up if it slept.
    public func remove(_ watch: Watch) { scheduler.remove(watch) }

    /// Every sleeping watch is woken (disarmed) and probed at the next step: before a stop, a
    /// snapshot or a final probe that must reach every watch.
    public func wakeAll(_ watches: some Sequence<Watch>) {
        for watch in watches { scheduler.wake(watch) }
    }

    /// Steps the awake ones among `watches` that need it, in order; those whose target is gone
    /// are returned in `gone` (still added: the driver detaches them). The stepped ones found
    /// settled go to sleep — armed before the driver looks for their children, so a fork
    /// after the arming wakes the parent. One left out this round (`needsStep`) stays awake
    /// and is not among `stepped`.
    public func step(_ watches: some Sequence<Watch>, at now: Double) -> (stepped: [Watch], gone: [Watch]) {
        var stepped: [Watch] = []
        var gone: [Watch] = []
        for watch in watches where scheduler.isAwake(watch) && watch.needsStep(at: now) {
            if watch.step(at: now) {
                stepped.append(watch)
            } else {
                gone.append(watch)
            }
        }
        for watch in stepped { scheduler.trySleep(watch) }
        return (stepped, gone)
    }

    /// Ends a round: tends the sleepers, then waits until the next round's tick while any
    /// watch is awake, or else until `idleDeadline`, a sleeper wakes, a signal is queued to the
    /// `SignalInbox` or one of `extra` is readable. Returns the readable ones of `extra`.
    @discardableResult
    public func endRound(at now: Double, idleDeadline: Double, extra: [Int32] = []) -> Set<Int32> {
        scheduler.tendSleepers(at: now)
        let deadline: Double
        if scheduler.awakeCount > 0 {
            // Back from an idle wait: the round is due now, not at a tick computed before it.
            if !probing { pacer.restart() }
            deadline = pacer.nextRoundDue()
            probing = true
        } else {
            deadline = idleDeadline
            probing = false
        }
        return scheduler.wait(until: deadline, extra: (SignalInbox.descriptor.map { [$0] } ?? []) + extra)
    }
}
