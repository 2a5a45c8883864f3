import StallDetection
import StallProc

/// Whether a process that has shown no event loop is in its parking wait, and what being
/// parked shows it to be: a supervisor or a helper.
struct ParkingClassifier {
    /// Syscalls a process parks in when it has no event loop (nginx's master, supervisors):
    /// idle until a loop wait is known, then ordinary blocking calls.
    static let parkingSyscalls: Set<Int> = [130, 128, 34]  // rt_sigsuspend, rt_sigtimedwait, pause
    static let childWaitSyscalls: Set<Int> = [61, 247]  // wait4, waitid

    /// Where a process with no event loop idles (a supervisor's timed queue get, a helper's
    /// read of its pipe): see `ParkingWaitTracker`.
    private var parkingWaits: ParkingWaitTracker
    /// The blocked call the previous probe saw, to count entries into a parking wait.
    private var lastBlockedCall: ProcSyscallInfo?
    /// Supervisor or helper, once the process was seen parked: a supervisor waits for signals
    /// or children, or has children; a helper has none.
    private(set) var parkedKind: ProcessKind?

    init(firstWaitIsParking: Bool) {
        parkingWaits = ParkingWaitTracker(trustsFirstLook: firstWaitIsParking)
    }

    /// Whether a process that has shown no event loop is in its parking wait (see
    /// `ParkingWaitTracker`): fed every probe that reaches it, so the tracker's first look is
    /// the agent's first look at the program. `learning` false once a loop is known: only
    /// calls already known park. `ran`: the thread spent CPU time since the previous probe, so
    /// a call seen again with the same arguments was left and entered again in between (a
    /// timed wait that times out and is re-entered in microseconds, as gunicorn 27's arbiter
    /// does every second, is never seen outside it).
    mutating func parked(in syscall: ProcSyscallInfo?, activity: ThreadActivity, learning: Bool, ran: Bool = false) -> Bool {
        defer { lastBlockedCall = syscall }
        guard case .inSyscall(let number, _, let sp, let pc)? = syscall else {
            return parkingWaits.observe(nil, kind: .never, newEntry: true)
        }
        let call = ParkingWaitTracker.Call(number: number, pc: pc, sp: sp)
        return parkingWaits.observe(
            call, kind: Self.parkingKind(number: number, activity: activity), newEntry: lastBlockedCall != syscall || ran,
            learning: learning)
    }

    /// Only a blocked call may be a parking wait: never a lock wait as the classifier tells it
    /// (a mutex, a PI mutex, a file lock: a process found deadlocked must be reported), never
    /// disk I/O. A sleep first seen may be a stall in progress; re-entered from one call it is
    /// a helper's beat.
    static func parkingKind(number: Int, activity: ThreadActivity) -> ParkingWaitTracker.Kind {
        guard activity == .blockedCall else { return .never }
        switch number {
        case 202, 0, 19, 45, 47, 43, 288, 61, 247:  // futex, read, readv, recvfrom, recvmsg, accept, accept4, wait4, waitid
            return .parkable
        case 35, 230: return .parkableWhenRepeated  // nanosleep, clock_nanosleep
        default: return .never
        }
    }

    /// Found parked in `syscall`: the first time says what the process is. `children`: the
    /// main thread's children file (/proc/PID/task/PID/children), read only when needed.
    mutating func noteParked(in syscall: ProcSyscallInfo?, children: () -> String) {
        guard parkedKind == nil else { return }
        if let number = syscall?.syscallNumber,
            Self.parkingSyscalls.contains(number) || Self.childWaitSyscalls.contains(number)
        {
            parkedKind = .supervisor
            return
        }
        parkedKind = children().contains(where: \.isNumber) ? .supervisor : .helper
    }

    /// A new program (an exec): nothing learnt of the old one holds.
    mutating func reset() {
        parkedKind = nil
        parkingWaits.reset()
        lastBlockedCall = nil
    }
}
