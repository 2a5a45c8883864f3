import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Waits on what the kernel says about a fixture's main thread rather than on the clock: a
/// fixture prints `ready` just before it enters its wait or its loop, and on a busy machine
/// it may not have run again by the time the test looks.
enum KernelState {
    /// The number of the system call `pid`'s main thread is blocked in, nil while it runs
    /// (`/proc/PID/syscall` reads `running`) or when it is gone.
    static func blockedSyscall(_ pid: pid_t) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/syscall", encoding: .utf8),
            let first = text.split(separator: " ").first
        else { return nil }
        return Int(first.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Waits until the main thread is blocked in one of `syscalls` (any system call when
    /// empty); false on the deadline.
    @discardableResult
    static func waitUntilBlocked(_ pid: pid_t, in syscalls: Set<Int> = [], timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let number = blockedSyscall(pid), syscalls.isEmpty || syscalls.contains(number) { return true }
            usleep(5_000)
        }
        return false
    }

    /// How many perf events `pid` holds open (its loop-turn counters, the idle waker, kernel
    /// stack samplers): an agent's progress, seen from outside.
    static func perfEvents(_ pid: pid_t) -> Int {
        let fds = "/proc/\(pid)/fd"
        return ((try? FileManager.default.contentsOfDirectory(atPath: fds)) ?? []).filter {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(fds)/\($0)")) == "anon_inode:[perf_event]"
        }.count
    }

    /// User + system CPU time of `pid` in clock ticks (`/proc/PID/stat` fields 14 and 15).
    static func cpuTicks(_ pid: pid_t) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // Fields after "comm)": 3 state, 4 ppid, … 14 utime, 15 stime.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        return user + system
    }

    /// Waits until `pid` has used `ticks` more clock ticks of CPU than it had when called: a
    /// fixture that spins right after `ready` is then inside its loop (everything before
    /// `ready` takes well under a tick). False on the deadline.
    @discardableResult
    static func waitUntilSpinning(_ pid: pid_t, ticks: Int = 3, timeout: Double = 10) -> Bool {
        guard let start = cpuTicks(pid) else { return false }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let now = cpuTicks(pid), now >= start + ticks { return true }
            usleep(5_000)
        }
        return false
    }

    /// Waits until a TCP socket of `pid` listens (IPv4, from `/proc/PID/net/tcp` and the
    /// process's socket descriptors); returns its port, nil on the deadline. For servers told
    /// to listen on port 0.
    static func listeningPort(of pid: pid_t, timeout: Double = 10) -> UInt16? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let port = currentListeningPort(of: pid) { return port }
            usleep(10_000)
        }
        return nil
    }

    private static func currentListeningPort(of pid: pid_t) -> UInt16? {
        let fdDirectory = "/proc/\(pid)/fd"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: fdDirectory)) ?? []
        var inodes: Set<Substring> = []
        for name in names {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: fdDirectory + "/" + name),
                target.hasPrefix("socket:[")
            else { continue }
            inodes.insert(Substring(target.dropFirst(8).dropLast()))
        }
        guard let table = try? String(contentsOfFile: "/proc/\(pid)/net/tcp", encoding: .utf8) else { return nil }
        // "sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode"; st 0A is LISTEN.
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, fields[3] == "0A", inodes.contains(fields[9]) else { continue }
            guard let colon = fields[1].lastIndex(of: ":"), let port = UInt16(fields[1][fields[1].index(after: colon)...], radix: 16)
            else { continue }
            return port
        }
        return nil
    }
}
