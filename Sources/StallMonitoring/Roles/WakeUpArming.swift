import StallProc

/// Sleeps the agent on a thread settled in its wait instead of probing it (issue 14: an idle
/// watch without periodic wake-ups), and says when the kernel saw the thread leave that wait.
/// Settled: in the same home wait twice with no turn counted and no episode open, or parked
/// (a supervisor in sigsuspend, a family's parent in wait4) in the very same call twice. One
/// probe is not enough: a thread found in a wait once may be passing through it.
final class WakeUpArming {
    /// What arming uses of the kernel: a `LoopWaker`, or a fake in tests.
    protocol Waker: AnyObject {
        var fd: Int32 { get }
        func arm() -> Bool
        func firstExit() -> Double?
        func disarm()
    }

    /// The call the latest probe found the thread parked in (idle, though not in a loop's
    /// wait): a supervisor's sigsuspend, a parent's wait4 in a watched family.
    private(set) var lastParked: ProcSyscallInfo?
    /// `lastParked` as the step before left it: parked in it again now is settled.
    private var previousParked: ProcSyscallInfo?
    /// The call this step and the one before found the thread in: the same home wait with no
    /// turn between, or the same parking call. What `arm` sleeps the thread on.
    private(set) var settledIn: ProcSyscallInfo?
    private var waker: Waker?
    /// The kernel refused the event once (no tracefs, no CAP_PERFMON): it is not asked again,
    /// and the probe keeps its fixed interval.
    private var wakerRefused = false
    /// When the kernel saw the thread leave its wait while the agent slept (see `takeLeftWait`).
    private var leftWaitAt: Double?
    /// Armed to record when the thread leaves its wait while the agent goes on probing it
    /// (see `arm`'s `recordOnly`); read and disarmed at the next step.
    private(set) var recording = false
    private let openWaker: () throws -> Waker

    init(openWaker: @escaping () throws -> Waker) {
        self.openWaker = openWaker
    }

    /// A step begins: nothing is settled until this step's probe says so. A record armed at
    /// the last step is read, for `takeLeftWait`.
    func beginStep() {
        if recording {
            recording = false
            disarm()
        }
        settledIn = nil
        previousParked = lastParked
        lastParked = nil
    }

    /// The probe found the thread in the same home wait as the last, with no turn between.
    func noteUnchangedWait(_ syscall: ProcSyscallInfo) {
        settledIn = syscall
    }

    /// The probe found the thread parked in `syscall`; in the very same call as at the step
    /// before, it is settled.
    func noteParked(in syscall: ProcSyscallInfo) {
        lastParked = syscall
        if syscall == previousParked { settledIn = syscall }
    }

    /// Opens the wake-up at the attach, not at the first arming: past the open-file limit, a
    /// family attached in a burst held every descriptor in its awake processes' probe files,
    /// and none of them could get the wake-up that lets it sleep and give them back (600
    /// processes under a limit of 1024: 64 slept, 284 were never watched). Asked again at
    /// arming if it failed for want of descriptors.
    func prepare() {
        guard waker == nil, !wakerRefused else { return }
        do {
            waker = try openWaker()
        } catch LoopTurnCounter.Unavailable.outOfDescriptors {
            return
        } catch {
            wakerRefused = true
        }
    }

    /// Arms a wake-up for the moment the thread leaves its wait and returns the descriptor to
    /// poll, when the last step found it settled there and the kernel offers the event; nil
    /// means keep probing. `eligible`: the watch goes on, no episode is open and a module check
    /// ran. The thread may have left between that step and the arming: the turn count (when
    /// counted, `counterUnchanged`) and the syscall file are read once more, armed, so a wait
    /// that ended in between is never slept through. Without a counter, a wait left and
    /// re-entered identically between the two reads (microseconds apart) goes unseen: a turn
    /// that short is no stall.
    ///
    /// `recordOnly`: the thread is settled but may not be slept on yet (a new watch before its
    /// first identity check). The event is armed all the same and nil returned: the agent goes
    /// on probing, and the next step knows when the thread left its wait from the kernel's
    /// record rather than from its own probe, which a loaded agent makes late (a `pg_sleep(2)`
    /// sent to a backend a second and a half after it connected, PostgreSQL under pgbench -S
    /// -c 50: 1.89 s in two runs of three, 110 ms of the agent's own delay).
    func arm(eligible: Bool, recordOnly: Bool = false, counterUnchanged: () -> Bool, syscall: () -> ProcSyscallInfo?)
        -> Int32?
    {
        guard eligible || recordOnly, !wakerRefused else { return nil }
        guard let expected = settledIn else { return nil }
        prepare()
        guard let waker, waker.arm() else { return nil }
        let countUnchanged = counterUnchanged()
        guard syscall() == expected, countUnchanged else {
            waker.disarm()
            return nil
        }
        guard eligible else {
            recording = true
            return nil
        }
        return waker.fd
    }

    /// Disarms what `arm` armed, keeping when the thread left its wait, if it did.
    func disarm() {
        leftWaitAt = waker?.firstExit()
        waker?.disarm()
    }

    /// When the kernel saw the thread leave its wait while the agent slept, once.
    func takeLeftWait() -> Double? {
        leftWaitAt.take()
    }
}

extension LoopWaker: WakeUpArming.Waker {}
