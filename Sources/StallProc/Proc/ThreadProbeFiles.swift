#if canImport(Glibc)
import Glibc
#endif

/// The three per-thread files the probe reads every few milliseconds, kept open and read with
/// `pread` at offset 0: reopening them costs 4.5–11 µs more per read than the read itself.
///
/// A thread the engine sleeps on its wake-up is not read until it wakes, so its files are
/// released meanwhile (`release`) and reopened by the first read after: a family of 600 idle
/// processes then holds one descriptor each (the wake-up), not four, and fits a soft limit of
/// 1024 (docs/architecture.md, "The engine"). An open file is what pinned the thread's
/// identity (its reads fail once the thread exits, whoever gets its id next), so a reopened set
/// is checked against the start time read before. Where no descriptor is free for the set
/// (every process awake at once, past the limit), each read opens its file for that read only.
public final class ThreadProbeFiles {
    public let pid: Int32
    public let tid: Int32
    private let base: String
    /// -1 while released.
    private var statFD: Int32 = -1
    private var syscallFD: Int32 = -1
    private var schedstatFD: Int32 = -1
    /// The thread's start time (stat field 22) from the first read: who the files belong to.
    private var startTicks: UInt64?
    /// The thread was found gone (or its id taken by another) when its files were reopened.
    private var gone = false
    private var buffer = [UInt8](repeating: 0, count: 1024)

    public init(pid: Int32, tid: Int32) throws {
        self.pid = pid
        self.tid = tid
        base = "/proc/\(pid)/task/\(tid)/"
        let (code, name) = openAll()
        guard code == 0 else { throw ProcFS.error(code, operation: "open \(base + name)", pid: pid) }
    }

    deinit { closeAll() }

    /// Opens the three files; returns 0, or the errno and name of the first that failed (none
    /// left open).
    private func openAll() -> (code: Int32, name: String) {
        var fds: [Int32] = []
        for name in ["stat", "syscall", "schedstat"] {
            let fd = open(base + name, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                let code = errno
                for opened in fds { close(opened) }
                return (code, name)
            }
            fds.append(fd)
        }
        (statFD, syscallFD, schedstatFD) = (fds[0], fds[1], fds[2])
        return (0, "")
    }

    private func closeAll() {
        for fd in [statFD, syscallFD, schedstatFD] where fd >= 0 { close(fd) }
        (statFD, syscallFD, schedstatFD) = (-1, -1, -1)
    }

    /// Whether the files are held now (false between `release` and the next read).
    public var isHeld: Bool { statFD >= 0 }

    /// Closes the files until the next read (the thread sleeps: nothing reads them).
    public func release() {
        if startTicks == nil { _ = stat() }
        closeAll()
    }

    /// Before a read of released files: reopens them and checks they are the same thread's.
    /// False: the thread is gone. Out of descriptors, the files stay released and each read
    /// opens its own (`read(_:else:)`).
    private func reacquire() -> Bool {
        guard !gone else { return false }
        guard !isHeld else { return true }
        let code = openAll().code
        if code == EMFILE || code == ENFILE { return true }
        guard code == 0 else {
            gone = true
            return false
        }
        let n = read(statFD)
        let now = n > 0 ? buffer.withUnsafeBytes { ProcThreadStat.parse(bytes: UnsafeRawBufferPointer(rebasing: $0[0..<n])) } : nil
        guard let now, startTicks == nil || now.startTicks == startTicks else {
            closeAll()
            gone = true
            return false
        }
        return true
    }

    /// Bytes of `fd` read into `buffer`, or of `name` opened for this read alone when the files
    /// are released; 0 or less means the thread is gone (ESRCH once it exits).
    private func read(_ fd: Int32, else name: String? = nil) -> Int {
        if fd < 0, let name {
            let once = open(base + name, O_RDONLY | O_CLOEXEC)
            guard once >= 0 else { return -1 }
            defer { close(once) }
            return read(once)
        }
        return buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
    }

    private func readFile(_ fd: Int32, else name: String) -> Substring? {
        let n = read(fd, else: name)
        if n <= 0 { return nil }
        return String(decoding: buffer[0..<n], as: UTF8.self)[...]
    }

    public func stat() -> ProcThreadStat? {
        guard reacquire() else { return nil }
        let n = read(statFD, else: "stat")
        if n <= 0 { return nil }
        let parsed = buffer.withUnsafeBytes { ProcThreadStat.parse(bytes: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        if let parsed {
            // Read by path (out of descriptors), another thread may hold the id now.
            guard startTicks == nil || parsed.startTicks == startTicks else { return nil }
            startTicks = startTicks ?? parsed.startTicks
        }
        return parsed
    }
    /// The syscall file of a thread asleep in its loop reads the same bytes probe after probe
    /// (same call, arguments, SP and PC): those bytes are compared, not parsed again. Parsing
    /// was the largest part of an idle watch's own CPU time.
    public func syscall() -> ProcSyscallInfo? {
        guard reacquire() else {
            lastSyscall = nil
            return nil
        }
        let n = read(syscallFD, else: "syscall")
        if n <= 0 {
            lastSyscall = nil
            return nil
        }
        if n == lastSyscallBytes.count, let last = lastSyscall,
            buffer.withUnsafeBytes({ new in lastSyscallBytes.withUnsafeBytes { memcmp(new.baseAddress!, $0.baseAddress!, n) == 0 } })
        {
            return last
        }
        let parsed = ProcSyscallInfo.parse(String(decoding: buffer[0..<n], as: UTF8.self)[...])
        lastSyscallBytes = Array(buffer[0..<n])
        lastSyscall = parsed
        return parsed
    }

    private var lastSyscallBytes: [UInt8] = []
    /// What the last `syscall()` read (nil: not read yet, or the thread is gone).
    public private(set) var lastSyscall: ProcSyscallInfo?
    public func schedstat() -> ProcSchedstat? {
        guard reacquire() else { return nil }
        return readFile(schedstatFD, else: "schedstat").flatMap(ProcSchedstat.parse)
    }
}
