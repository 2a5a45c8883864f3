/// Tells a process that has no event loop where it idles: a supervisor or helper that waits
/// in an ordinary blocking call rather than epoll/poll/select (issue 24). gunicorn's arbiter
/// waits in `SimpleQueue.get(timeout=1.0)`, a futex wait that returns every second from the
/// same call; multiprocessing's resource tracker sits in `read()` on its pipe for its whole
/// life. Judged as work, both became stalls that never ended.
///
/// A call is this process's parking wait when
/// - the agent's first look at the program found the thread in it (it had sat there since
///   before the agent came; only where `trustsFirstLook`: a process watched as one of a
///   family, where helpers are, not one a user pointed the agent at while it was stuck), or
/// - the thread entered it `reentriesToPark` times from the same call site (stack pointer and
///   PC of the system call), as a supervisor's loop does.
/// Time in a parking wait is idle. New parking waits are learned only while no loop wait is
/// known (a wait inside a loop's work is work, issue 10), and never a mutex, a file lock, disk
/// I/O or a sleep first seen (a process found asleep may be a stall in progress; one that
/// sleeps again and again from one call is a helper's beat). A parking wait learned before a
/// loop wait appeared stays one (`learning` false): uvicorn's master idles in
/// `Event.wait(0.5)` and pings each worker through a `poll()` that blocks only when a worker
/// is slow to answer; that poll is not where it idles, and judging the half-second waits as
/// work made every loaded run a stall under the stack rule (docs/architecture.md, "What
/// a process is"). The price: a worker first seen in the middle of a stall in such a call keeps that
/// one call site idle.
/// Pure: the monitor reports each call it sees; no clock, no files.
public struct ParkingWaitTracker: Sendable {
    /// A blocked call: its system call number and where it was made.
    public struct Call: Hashable, Sendable {
        public var number: Int
        public var pc: UInt64
        public var sp: UInt64
        public init(number: Int, pc: UInt64, sp: UInt64) {
            self.number = number
            self.pc = pc
            self.sp = sp
        }
    }

    /// What kind of blocked call the monitor saw.
    public enum Kind: Sendable {
        /// May be a parking wait either way (a futex wait that is not a mutex's, a read of a
        /// pipe or socket, accept, a child wait).
        case parkable
        /// A parking wait only when re-entered (a sleep).
        case parkableWhenRepeated
        /// Never (a mutex, a file lock, disk I/O, anything running).
        case never
    }

    public static let reentriesToPark = 3

    public private(set) var parkingCalls: Set<Call> = []
    private var entries: [Call: Int] = [:]
    private var firstLookDone = false
    private var previous: Call?
    private let trustsFirstLook: Bool

    public init(trustsFirstLook: Bool = true) { self.trustsFirstLook = trustsFirstLook }

    /// Classifies what the latest probe saw (`call` nil: the thread was not blocked in a
    /// call). `newEntry`: the thread was seen elsewhere in between, or the call's arguments
    /// changed, so this is another entry. `learning` false: only calls already known park (a
    /// loop wait is known now). Returns true when the thread is parked.
    public mutating func observe(_ call: Call?, kind: Kind, newEntry: Bool, learning: Bool = true) -> Bool {
        defer {
            firstLookDone = true
            previous = call
        }
        guard let call, kind != .never else { return false }
        if parkingCalls.contains(call) { return true }
        guard learning else { return false }
        if !firstLookDone, trustsFirstLook, kind == .parkable {
            parkingCalls.insert(call)
            return true
        }
        if newEntry || previous != call {
            if entries.count >= 1024 { entries.removeAll() }
            entries[call, default: 0] += 1
            if entries[call, default: 0] >= Self.reentriesToPark, parkingCalls.count < 16 {
                parkingCalls.insert(call)
                return true
            }
        }
        return false
    }

    /// True once a parking wait is known: the process idles outside an event loop.
    public var knowsParking: Bool { !parkingCalls.isEmpty }

    /// Forgets everything (the process exec'd: a new program, a new first look).
    public mutating func reset() {
        self = ParkingWaitTracker(trustsFirstLook: trustsFirstLook)
    }
}
