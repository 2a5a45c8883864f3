import StallProc

#if canImport(Glibc)
import Glibc
#endif

/// A watched thread as the scheduler sees it: something that can be put to sleep on a
/// descriptor the kernel makes readable when the thread leaves its wait (or exits).
public protocol WakeableWatch: AnyObject {
    /// Arms the wake-up and returns the descriptor to poll, or nil to keep probing.
    func armWakeUp() -> Int32?
    /// Disarms what `armWakeUp` armed.
    func disarmWakeUp()
    /// How the engine's trace names it (`STALLAGENT_TRACE_ENGINE`).
    var wakeLabel: String { get }
    /// Called now and then while it sleeps (`WatchScheduler.tendSleepers`), for what must
    /// happen without a wake-up: a thread's turn counters rest once it has been calm a while.
    func tendAsleep(at now: Double)
}

extension WakeableWatch {
    public func tendAsleep(at now: Double) {}
}

/// Which watched threads the probe loop steps this round (docs/architecture.md, "The engine").
///
/// A thread asleep in its loop's wait costs nothing: its wake-up is armed once and it is left
/// out of every round until the kernel says it left the wait, however many rounds and
/// housekeeping ticks pass. Only the awake ones are probed on the round's pace. The cost of
/// an idle family is then one `poll` set, not one probe per process per round: watching 200
/// idle processes costs what watching one does, plus the descriptors.
public final class WatchScheduler<Watch: WakeableWatch> {
    private var awake: [ObjectIdentifier: Watch] = [:]
    /// Asleep, with the descriptor that wakes them.
    private var asleep: [ObjectIdentifier: (watch: Watch, fd: Int32)] = [:]
    /// How many times a watch was put to sleep and woken (the tests count them).
    public private(set) var sleeps = 0
    public private(set) var wakes = 0
    /// When `tendSleepers` last went through the sleepers.
    private var lastTended = -Double.infinity

    /// STALLAGENT_TRACE_ENGINE set: one stderr line per sleep and wake (`engine TIME: sleep
    /// NAME[PID]`), for diagnosing the engine; the tests read it.
    private let trace = getenv("STALLAGENT_TRACE_ENGINE") != nil

    public init() {}

    private func say(_ what: String) {
        let line = Array("engine \(MonotonicTime.seconds()): \(what)\n".utf8)
        _ = line.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }

    /// A new watch starts awake: it is probed until it is seen settled in its wait.
    public func add(_ watch: Watch) {
        awake[ObjectIdentifier(watch)] = watch
    }

    /// Forgets a watch, disarming its wake-up if it was asleep.
    public func remove(_ watch: Watch) {
        let id = ObjectIdentifier(watch)
        awake[id] = nil
        if asleep.removeValue(forKey: id) != nil { watch.disarmWakeUp() }
    }

    /// Lets each sleeping watch do what its sleep needs (`WakeableWatch.tendAsleep`), at most
    /// four times a second whatever the round's pace.
    public func tendSleepers(at now: Double) {
        guard now - lastTended >= 0.25 else { return }
        lastTended = now
        for sleeper in asleep.values { sleeper.watch.tendAsleep(at: now) }
    }

    public func isAwake(_ watch: Watch) -> Bool { awake[ObjectIdentifier(watch)] != nil }

    public var awakeCount: Int { awake.count }
    public var asleepCount: Int { asleep.count }

    /// After a step: a watch found settled in its wait goes to sleep on its wake-up.
    /// Arm first, then let the caller look for children: a fork after the arming wakes it.
    @discardableResult
    public func trySleep(_ watch: Watch) -> Bool {
        let id = ObjectIdentifier(watch)
        guard awake[id] != nil, let fd = watch.armWakeUp() else { return false }
        awake[id] = nil
        asleep[id] = (watch, fd)
        sleeps += 1
        if trace { say("sleep \(watch.wakeLabel)") }
        return true
    }

    /// Wakes a sleeping watch by hand (a signal for the whole loop, a stop): it is probed next round.
    public func wake(_ watch: Watch) {
        let id = ObjectIdentifier(watch)
        guard asleep.removeValue(forKey: id) != nil else { return }
        watch.disarmWakeUp()
        awake[id] = watch
        wakes += 1
        if trace { say("wake \(watch.wakeLabel)") }
    }

    /// Sleeps until `deadline` (monotonic seconds), a sleeping watch's descriptor is readable
    /// (it left its wait, or exited: POLLIN or POLLHUP), or one of `extra` is readable (a
    /// signal inbox, a listener). Woken watches are awake when it returns; it returns the
    /// `extra` descriptors that were readable. EINTR ends the wait early, as a signal should.
    @discardableResult
    public func wait(until deadline: Double, extra: [Int32] = []) -> Set<Int32> {
        // The sleepers first, in the order of `sleepers`, then `extra`.
        let sleepers = Array(asleep.values)
        var fds = [pollfd]()
        fds.reserveCapacity(sleepers.count + extra.count)
        for sleeper in sleepers { fds.append(pollfd(fd: sleeper.fd, events: Int16(POLLIN), revents: 0)) }
        for fd in extra { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        let remaining = deadline - MonotonicTime.seconds()
        // Milliseconds, rounded up: a 0.4 ms wait must not become a busy loop of zero timeouts.
        let timeout = remaining <= 0 ? 0 : Int32(min((remaining * 1000).rounded(.up), 3_600_000))
        let ready = poll(&fds, nfds_t(fds.count), timeout)
        guard ready > 0 else { return [] }
        var readyExtra = Set<Int32>()
        for (index, entry) in fds.enumerated() where entry.revents != 0 {
            if index < sleepers.count {
                wake(sleepers[index].watch)
            } else {
                readyExtra.insert(entry.fd)
            }
        }
        return readyExtra
    }
}
