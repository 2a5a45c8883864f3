import StallDetection

/// Turns what /proc says about a thread into a `ThreadActivity` plus the detail a person
/// wants to read ("blocked in nanosleep", "waiting on mutex 0x…"). Pure: the caller reads the
/// files; `fileKind` answers what an fd is (regular file vs pipe/socket) when it matters.
public struct ThreadStateClassifier: Sendable {
    /// x86-64 syscalls an event loop idles in (docs/architecture.md, "Detection model").
    public static let defaultIdleSyscalls: Set<Int> = [
        232,  // epoll_wait
        281,  // epoll_pwait
        441,  // epoll_pwait2
        7,  // poll
        271,  // ppoll
        23,  // select
        270,  // pselect6
    ]
    static let futex = 202
    package static let fsyncLike: Set<Int> = [74, 75, 277, 162]  // fsync, fdatasync, sync_file_range, sync
    package static let fileIO: Set<Int> = [0, 1, 17, 18, 19, 20, 295, 296, 40, 275, 276]  // read … splice
    static let lockCalls: Set<Int> = [73]  // flock
    static let fcntl = 72

    public var idleSyscalls: Set<Int>

    public init(extraIdleSyscalls: Set<Int> = []) {
        idleSyscalls = ThreadStateClassifier.defaultIdleSyscalls.union(extraIdleSyscalls)
    }

    public struct Result: Equatable, Sendable {
        public var activity: ThreadActivity
        /// Human-readable: "idle in epoll_wait", "blocked in read (pipe)", "running".
        public var detail: String
        /// For mutex waits: the futex word's address (glibc keeps the owner TID at +8).
        public var futexAddress: UInt64?

        package init(activity: ThreadActivity, detail: String, futexAddress: UInt64? = nil) {
            self.activity = activity
            self.detail = detail
            self.futexAddress = futexAddress
        }
    }

    public func classify(
        state: Character, syscall: ProcSyscallInfo?, fileKind: (Int) -> String? = { _ in nil }
    ) -> Result {
        switch state {
        case "Z", "X", "x": return Result(activity: .gone, detail: "exited", futexAddress: nil)
        case "T", "t": return Result(activity: .stopped, detail: state == "t" ? "stopped by a tracer" : "stopped (job control)", futexAddress: nil)
        case "R": return Result(activity: .running, detail: "running", futexAddress: nil)
        default: break
        }
        guard let syscall else { return Result(activity: .running, detail: "running", futexAddress: nil) }
        switch syscall {
        case .running:
            return Result(activity: state == "D" ? .ioWait : .running, detail: state == "D" ? "in uninterruptible wait" : "running", futexAddress: nil)
        case .blockedOutsideSyscall:
            return Result(
                activity: state == "D" ? .ioWait : .blockedCall,
                detail: state == "D" ? "in uninterruptible wait (page fault?)" : "blocked outside a system call", futexAddress: nil)
        case .inSyscall(let number, let arguments, _, _):
            let name = ProcSyscallInfo.name(ofSyscall: number)
            if idleSyscalls.contains(number) && state != "D" {
                return Result(activity: .idle, detail: "idle in \(name)", futexAddress: nil)
            }
            if number == ThreadStateClassifier.futex {
                let op = arguments[1] & 0x7f
                let value = arguments[2]
                // glibc's lowlevellock waits with FUTEX_WAIT and value 2 ("locked, waiters");
                // PI mutexes use LOCK_PI/LOCK_PI2. Condition variables and semaphores use
                // other values or WAIT_BITSET: waiting for another thread, but not a lock.
                // pthread_mutex_timedlock waits the same way through FUTEX_WAIT_BITSET (9).
                if ((op == 0 || op == 9) && value == 2) || op == 6 || op == 13 {
                    return Result(activity: .lockWait, detail: "waiting on lock 0x\(String(arguments[0], radix: 16))", futexAddress: arguments[0])
                }
                return Result(
                    activity: .blockedCall, detail: "waiting on futex 0x\(String(arguments[0], radix: 16)) (condition variable or semaphore)", futexAddress: nil
                )
            }
            if ThreadStateClassifier.lockCalls.contains(number)
                || (number == ThreadStateClassifier.fcntl && (arguments[1] == 7 || arguments[1] == 38))
            {
                return Result(activity: .lockWait, detail: "waiting on a file lock (\(name))", futexAddress: nil)
            }
            if state == "D" || ThreadStateClassifier.fsyncLike.contains(number) {
                return Result(activity: .ioWait, detail: "in disk I/O (\(name))", futexAddress: nil)
            }
            if ThreadStateClassifier.fileIO.contains(number) {
                let kind = fileKind(Int(arguments[0]))
                if let kind, kind.hasPrefix("/") {
                    return Result(activity: .ioWait, detail: "in file I/O (\(name) on \(kind))", futexAddress: nil)
                }
                return Result(activity: .blockedCall, detail: "blocked in \(name)" + (kind.map { " (\($0))" } ?? ""), futexAddress: nil)
            }
            return Result(activity: .blockedCall, detail: "blocked in \(name)", futexAddress: nil)
        }
    }
}
