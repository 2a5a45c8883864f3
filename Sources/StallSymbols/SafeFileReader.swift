import Foundation
import Synchronization

import CPosix
import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// Opens and reads files that someone else controls (the watched process's executable,
/// libraries, debug files and perf map, which its owner can replace, truncate or turn into a
/// FIFO) without letting them block or crash the agent.
public enum SafeFileReader {
    /// Opens `path` read-only for a regular file, and never opens anything else. The path is
    /// first resolved to an `O_PATH` descriptor (no open of the file itself: a device's open
    /// arms a watchdog or rewinds a tape, a FIFO's releases a writer waiting for a reader),
    /// with O_NOFOLLOW so a last component swapped for a symbolic link is refused; fstat on
    /// that descriptor must say regular file; only then is the very inode opened, through
    /// `/proc/self/fd`, which resolves nothing again. A directory on the way that the
    /// target's owner replaced with a link (`.debug/` → `/dev`, issue 27) therefore leads
    /// at most to a regular file, which callers then check (build-id, CRC, device and inode).
    /// The caller closes the descriptor.
    public static func openRegularFile(_ path: String, maxBytes: Int64 = Int64.max) throws -> (fd: Int32, info: stat) {
        let handle = open(path, sa_o_path() | O_NOFOLLOW | O_CLOEXEC)
        if handle < 0 { throw StallAgentError.system(operation: "open \(path)", errno: errno) }
        defer { close(handle) }
        var info = stat()
        guard fstat(handle, &info) == 0 else {
            throw StallAgentError.system(operation: "fstat \(path)", errno: errno)
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw StallAgentError.invalidArgument("\(path): not a regular file")
        }
        guard Int64(info.st_size) <= maxBytes else {
            throw StallAgentError.invalidArgument("\(path): larger than \(maxBytes) bytes")
        }
        // O_NONBLOCK still: a mandatory-locked or leased file must not block the open.
        let fd = open("/proc/self/fd/\(handle)", O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        if fd < 0 { throw StallAgentError.system(operation: "open \(path)", errno: errno) }
        var opened = stat()
        guard fstat(fd, &opened) == 0, opened.st_dev == info.st_dev, opened.st_ino == info.st_ino else {
            close(fd)
            throw StallAgentError.invalidArgument("\(path): changed while opened")
        }
        return (fd, opened)
    }

    /// The whole of a regular file, read with pread into memory the agent owns (so a later
    /// truncation cannot fault), up to `maxBytes`.
    public static func readRegularFile(_ path: String, maxBytes: Int) throws -> [UInt8] {
        let (fd, info) = try openRegularFile(path, maxBytes: Int64(maxBytes))
        defer { close(fd) }
        return try read(fd: fd, count: Int(info.st_size), path: path)
    }

    /// Up to `count` bytes from offset 0 (fewer when the file shrank meanwhile).
    public static func read(fd: Int32, count: Int, path: String) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + offset, count - offset, off_t(offset)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw StallAgentError.system(operation: "read \(path)", errno: errno)
            }
            if n == 0 { break }
            offset += n
        }
        if offset < count { bytes.removeLast(count - offset) }
        return bytes
    }

    /// Major and minor of a device number, as `/proc/PID/maps` prints them (`fd:01`).
    static func deviceText(_ device: UInt64) -> String {
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~UInt64(0xfff))
        let minor = (device & 0xff) | ((device >> 12) & ~UInt64(0xff))
        let majorText = String(major, radix: 16)
        let minorText = String(minor, radix: 16)
        return (majorText.count < 2 ? "0" + majorText : majorText) + ":" + (minorText.count < 2 ? "0" + minorText : minorText)
    }
}

private final class ResultBox<T: Sendable>: Sendable {
    let done = DispatchSemaphore(value: 0)
    let value = Mutex<T?>(nil)
}

/// Runs file-system work that might never return (a hung NFS or FUSE mount leaves a thread in
/// uninterruptible sleep) on a worker thread, and waits for it only until a deadline. A worker
/// that misses its deadline is abandoned (it cannot be cancelled) and a fresh one takes the
/// next jobs; after a few stuck workers, work is refused at once instead of piling up threads.
public final class BoundedFileIO: Sendable {
    public static let shared = BoundedFileIO()

    /// Long enough for a cold read of a large binary's headers from a slow disk.
    public static let defaultDeadline = 2.0
    /// Stuck threads kept at most; each holds only its stack.
    static let maxAbandoned = 8

    // Unchecked: `jobs` is read and written only while `condition` is locked, and every job is `@Sendable`.
    private final class Worker: @unchecked Sendable {
        let condition = NSCondition()
        var jobs: [@Sendable () -> Void] = []

        init() {
            let thread = Thread { [self] in run() }
            thread.name = "stallagent-file-io"
            thread.stackSize = 1 << 20
            thread.start()
        }

        private func run() {
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let job = jobs.removeFirst()
                condition.unlock()
                job()
            }
        }

        func submit(_ job: @escaping @Sendable () -> Void) {
            condition.lock()
            jobs.append(job)
            condition.signal()
            condition.unlock()
        }
    }

    private struct State {
        var worker: Worker?
        var abandoned = 0
    }

    private let state = Mutex<State>(State())

    public init() {}

    /// Stuck workers so far (each one a file that never answered).
    public var abandonedWorkers: Int { state.withLock { $0.abandoned } }

    /// `body`'s result, or nil when it did not finish within `deadline` seconds (or too many
    /// workers are already stuck).
    public func run<T: Sendable>(deadline: Double = BoundedFileIO.defaultDeadline, _ body: @escaping @Sendable () -> T) -> T? {
        guard
            let worker = state.withLock({ state -> Worker? in
                if state.abandoned >= Self.maxAbandoned { return nil }
                if state.worker == nil { state.worker = Worker() }
                return state.worker
            })
        else { return nil }
        let box = ResultBox<T>()
        worker.submit {
            let value = body()
            box.value.withLock { $0 = value }
            box.done.signal()
        }
        if box.done.wait(timeout: .now() + deadline) == .timedOut {
            state.withLock { state in
                // Only the first caller to notice replaces the worker; later jobs queued behind
                // the same stuck one find it already gone.
                if state.worker === worker {
                    state.worker = nil
                    state.abandoned += 1
                }
            }
            return nil
        }
        return box.value.withLock { $0 }
    }
}
