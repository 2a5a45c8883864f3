import Synchronization
import CPosix
import StallDetection
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Counts one thread's entries into the idle-wait system calls with per-thread perf_event
/// counters on the `syscalls:sys_enter_*` tracepoints (docs/architecture.md, "Detection model").
///
/// An event loop enters its wait once per turn, whether or not the wait then sleeps, so a count
/// that moved between two probes proves the loop turned even when the probe never caught it
/// asleep — the case of a saturated server. Counting mode only: the kernel increments a number
/// at syscall entry and never wakes the agent or stops the target. The counters are one perf
/// group, so one `read(2)` returns all of them.
public final class LoopTurnCounter {
    /// Why the kernel counters cannot be used; the agent then falls back to the stack rule.
    public enum Unavailable: Error, CustomStringConvertible, Equatable {
        case noTracefs(String)
        case noTracepoints
        case notPermitted(String)
        case failed(String)
        /// EMFILE or ENFILE: a passing shortage (every process of a family awake at once), not
        /// a refusal; asked again later.
        case outOfDescriptors

        public var description: String {
            switch self {
            case .noTracefs(let why): return "tracefs is not available (\(why))"
            case .noTracepoints: return "this kernel has no syscall tracepoints (CONFIG_FTRACE_SYSCALLS)"
            case .notPermitted(let why):
                return
                    "perf_event_open on syscall tracepoints was refused (\(why)); it needs root, CAP_PERFMON (with CAP_DAC_READ_SEARCH for tracefs) or kernel.perf_event_paranoid ≤ -1"
            case .failed(let why): return "perf_event_open failed: \(why)"
            case .outOfDescriptors: return "perf_event_open failed: out of file descriptors (the agent's open-file limit is reached)"
            }
        }
    }

    /// The waits an event loop turns through: the idle set plus io_uring's submission call.
    public static let tracepointNames = [
        "epoll_wait", "epoll_pwait", "epoll_pwait2", "poll", "ppoll", "select", "pselect6", "io_uring_enter",
    ]

    public let tid: Int32
    /// Names of the tracepoints actually counted (a kernel may lack some, e.g. epoll_pwait2).
    public private(set) var counted: [String]
    private var fds: [Int32]
    private var buffer: [UInt64]
    /// Whether this counter counts among the anchors' users (not once its opening failed).
    private var retained = true
    /// Waits `count(wait:)` could not add.
    private var refused: Set<String> = []
    /// With stamps (see `init`): the ring every wait's entries and exits are written to, and
    /// which event id is an entry.
    private var ring: (pointer: UnsafeMutableRawPointer, bytes: Int)?
    /// The drain's input (the entry events' ids, `addStamped`) and output, in memory of its own:
    /// a C struct in a class's stored property was copied in and out at every drain.
    private let drainRequest: UnsafeMutablePointer<sa_wait_stamp_summary> = {
        let pointer = UnsafeMutablePointer<sa_wait_stamp_summary>.allocate(capacity: 1)
        pointer.initialize(to: sa_wait_stamp_summary())
        return pointer
    }()
    private let stamped: Bool

    /// `waits`: the waits to count (names from `tracepointNames`), or nil for all of them.
    /// Counting only the wait the loop was seen in is cheaper for the target: each counter is
    /// scheduled in and out with the thread at every context switch, a cost per event (a pipe
    /// round trip of a thread with all 8: +1.2–1.8 µs of CPU; with 1: +0.4–0.7 µs).
    ///
    /// `stamped`: every entry into a counted wait and every exit from it also writes a stamp
    /// (when, and the user SP and PC: the wait's site) into a ring the agent reads from memory
    /// (`drainStamps`), so a thread that keeps turning needs no probe to say so
    /// (docs/architecture.md, "Wait stamps"). Each stamp costs the thread a few hundred ns more
    /// than the count; refused (a kernel without the exit tracepoints), the counter counts only.
    public init(tid: Int32, waits: Set<String>? = nil, stamped: Bool = false) throws {
        var ids = try LoopTurnCounter.tracepointIDs()
        if let waits, ids.contains(where: { waits.contains($0.0) }) { ids = ids.filter { waits.contains($0.0) } }
        self.tid = tid
        self.stamped = stamped
        fds = []
        counted = []
        buffer = []
        TracepointAnchors.retain(ids.map(\.1))
        for (name, id) in ids where !add(name, id: id) {
            let error = errno
            fds.forEach { close($0) }
            stampOnly.forEach { close($0) }
            fds = []
            stampOnly = []
            dropRing()
            TracepointAnchors.release()
            retained = false
            // A thread that exits while its counters are opened makes the kernel answer
            // ENODEV or ESRCH, not "unavailable": the target is gone, the counters are fine.
            if LoopTurnCounter.isGoneOrExiting(tid) { throw StallAgentError.noSuchProcess(pid: tid) }
            switch error {
            case EACCES, EPERM: throw Unavailable.notPermitted(String(cString: strerror(error)))
            case ESRCH: throw StallAgentError.noSuchProcess(pid: tid)
            default: throw Unavailable.failed("\(name): \(String(cString: strerror(error)))")
            }
        }
    }

    /// Counts one more wait from now on (the loop was seen waiting in it); false when it is
    /// already counted, unknown to this kernel, or refused (its turns then go uncounted, as
    /// before).
    @discardableResult
    public func count(wait name: String) -> Bool {
        // The monitor asks at every idle probe: a wait refused or unknown once is not retried.
        guard !counted.contains(name), !refused.contains(name),
            let id = (try? LoopTurnCounter.tracepointIDs())?.first(where: { $0.0 == name })?.1, add(name, id: id)
        else {
            if !counted.contains(name) { refused.insert(name) }
            return false
        }
        return true
    }

    /// Opens one counter into the group; false with errno set when the kernel refused it.
    private func add(_ name: String, id: UInt64) -> Bool {
        TracepointAnchors.add([id])
        if stamped, fds.isEmpty || ring != nil, let exit = LoopTurnCounter.exitTracepointID(of: name) {
            TracepointAnchors.add([exit])
            if addStamped(entry: id, exit: exit) { return true }
            // Stamps refused: counted as before, and the ring (if this was its first wait) is not used.
            if fds.isEmpty { dropRing() }
        }
        let fd = sa_perf_tracepoint_counter(id, tid, fds.first ?? -1)
        guard fd >= 0 else { return false }
        fds.append(fd)
        counted.append(name)
        buffer = Array(repeating: 0, count: fds.count + 1)
        return true
    }

    /// The stamped pair of one wait: its entry, counted in the group and stamped, and its exit,
    /// stamped only (outside the group, so the group's read still counts entries alone).
    private func addStamped(entry: UInt64, exit: UInt64) -> Bool {
        var pointer: UnsafeMutableRawPointer?
        var bytes = 0
        var entryID: UInt64 = 0
        var exitID: UInt64 = 0
        let entryFD = sa_perf_tracepoint_stamper(entry, tid, fds.first ?? -1, fds.first ?? -1, &pointer, &bytes, &entryID)
        guard entryFD >= 0 else { return false }
        if fds.isEmpty, let pointer { ring = (pointer, bytes) }
        let exitFD = sa_perf_tracepoint_stamper(exit, tid, -1, fds.first ?? entryFD, &pointer, &bytes, &exitID)
        guard exitFD >= 0 else {
            let error = errno
            close(entryFD)
            if fds.isEmpty { dropRing() }
            errno = error
            return false
        }
        fds.append(entryFD)
        stampOnly.append(exitFD)
        let slot = Int(drainRequest.pointee.entry_id_count)
        if slot < 8 {
            withUnsafeMutableBytes(of: &drainRequest.pointee.entry_ids) {
                $0.storeBytes(of: entryID, toByteOffset: slot * MemoryLayout<UInt64>.size, as: UInt64.self)
            }
            drainRequest.pointee.entry_id_count += 1
        }
        counted.append(LoopTurnCounter.name(ofEntry: entry) ?? "")
        buffer = Array(repeating: 0, count: fds.count + 1)
        return true
    }

    /// Exit events: stamps only, not in the counted group.
    private var stampOnly: [Int32] = []

    private func dropRing() {
        if let ring { sa_perf_wait_stamps_unmap(ring.pointer, ring.bytes) }
        ring = nil
    }

    /// The entries and exits of the counted waits since the last call, added up against the
    /// `home` site (see `WaitStampSummary`); nil when this counter has no stamps. Called every
    /// round for every awake thread of a family: no allocation, the adding up is C's.
    public func drainStamps(home: HomeWaitTracker.Site?) -> WaitStampSummary? {
        guard let ring else { return nil }
        return Self.drain(ring: ring.pointer, bytes: ring.bytes, request: drainRequest, home: home)
    }

    /// `sa_perf_wait_stamps_drain` on one ring, read back as a summary (apart for its tests,
    /// which hand it a ring written by hand).
    static func drain(
        ring: UnsafeMutableRawPointer, bytes: Int, request: UnsafeMutablePointer<sa_wait_stamp_summary>,
        home: HomeWaitTracker.Site?
    ) -> WaitStampSummary {
        request.pointee.home_pc = home?.pc ?? 0
        request.pointee.home_sp = home?.sp ?? 0
        sa_perf_wait_stamps_drain(ring, bytes, request)
        let raw = request.pointee
        var summary = WaitStampSummary()
        summary.stamps = Int(raw.stamps)
        summary.lost = raw.lost != 0
        if raw.other_sites > 0 { summary.otherSite = HomeWaitTracker.Site(pc: raw.other_pc, sp: raw.other_sp) }
        summary.lastEntered = raw.last_entered != 0
        if raw.stamps > 0 { summary.lastTime = Double(raw.last_ns) / 1e9 }
        if raw.last_home_entry_ns > 0 { summary.lastHomeEntry = Double(raw.last_home_entry_ns) / 1e9 }
        if raw.left_home_ns > 0 { summary.leftHome = Double(raw.left_home_ns) / 1e9 }
        return summary
    }

    deinit {
        drainRequest.deallocate()
        fds.forEach { close($0) }
        stampOnly.forEach { close($0) }
        dropRing()
        if retained { TracepointAnchors.release() }
    }

    private static func isGoneOrExiting(_ tid: Int32) -> Bool {
        guard let text = try? ProcFS.readText("/proc/\(tid)/stat", pid: tid), let stat = ProcThreadStat.parse(text)
        else { return true }
        return stat.isExiting
    }

    /// Total entries into the counted waits since the counter was opened; nil when the read
    /// fails (the caller then treats the turn evidence as unavailable for this probe).
    public func read() -> UInt64? {
        let wanted = buffer.count * MemoryLayout<UInt64>.size
        let got = buffer.withUnsafeMutableBytes { Glibc.read(fds[0], $0.baseAddress, wanted) }
        guard got == wanted, buffer[0] == UInt64(fds.count) else { return nil }
        return buffer[1...].reduce(0, &+)
    }

    // MARK: tracefs

    /// Tracepoint ids are global: read once per agent, once the read succeeded or failed for a
    /// reason that lasts. Out of descriptors is not one: remembered, it turned the counters off
    /// for the agent's life and was said as "no syscall tracepoints" (issue 27).
    private static let cachedIDs = Mutex<Result<[(String, UInt64)], Unavailable>?>(nil)

    static func tracepointIDs() throws -> [(String, UInt64)] {
        if let known = cachedIDs.withLock({ $0 }) { return try known.get() }
        let result = Result { try readTracepointIDs() }.mapError { $0 as? Unavailable ?? .failed("\($0)") }
        if case .failure(.outOfDescriptors) = result { return try result.get() }
        cachedIDs.withLock { $0 = result }
        return try result.get()
    }

    private static func readTracepointIDs() throws -> [(String, UInt64)] {
        let root = try tracefsRoot()
        let ids: [(String, UInt64)] = tracepointNames.compactMap { name in
            tracepointID("syscalls/sys_enter_\(name)", root: root).map { (name, $0) }
        }
        guard ids.contains(where: { $0.0.hasPrefix("epoll") || $0.0.hasPrefix("poll") }) else {
            let probe = open(root + "/events", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            let code = errno
            if probe >= 0 { close(probe) }
            if probe < 0 && (code == EMFILE || code == ENFILE) {
                throw Unavailable.outOfDescriptors
            }
            throw Unavailable.noTracepoints
        }
        return ids
    }

    /// The exit tracepoint of wait `name` (nil: this kernel has none, or tracefs is gone).
    static func exitTracepointID(of name: String) -> UInt64? {
        exitIDs.withLock { known in
            if let id = known[name] { return id }
            guard let root = try? tracefsRoot(), let id = tracepointID("syscalls/sys_exit_\(name)", root: root) else { return nil }
            known[name] = id
            return id
        }
    }

    private static let exitIDs = Mutex<[String: UInt64]>([:])

    /// The wait whose entry tracepoint is `id`.
    static func name(ofEntry id: UInt64) -> String? {
        (try? tracepointIDs())?.first { $0.1 == id }?.0
    }

    /// The id of tracepoint `event` (`group/name`) under the tracefs mounted at `root`.
    static func tracepointID(_ event: String, root: String) -> UInt64? {
        (try? String(contentsOfFile: "\(root)/events/\(event)/id", encoding: .utf8))
            .flatMap { UInt64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// The tracefs mount; as root, mounts it at /sys/kernel/tracing when nothing is mounted
    /// (what `perf trace` and bpftrace do). The mount is the kernel's own and harmless to keep.
    static func tracefsRoot() throws -> String {
        let candidates = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        // stat, not access(2): access checks the real uid without capabilities, and an agent
        // with CAP_DAC_READ_SEARCH may read tracefs (mode 0700) without being root.
        for root in candidates where Self.exists("\(root)/events") {
            return root
        }
        if Self.exists("/sys/kernel/tracing") {
            if geteuid() != 0 { throw Unavailable.noTracefs("not mounted at /sys/kernel/tracing; only root can mount it") }
            if mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nil) == 0, Self.exists("/sys/kernel/tracing/events") {
                return "/sys/kernel/tracing"
            }
            let error = errno
            if error == EACCES || error == EPERM {
                throw Unavailable.noTracefs("not mounted, and mounting it was refused: \(String(cString: strerror(error)))")
            }
            throw Unavailable.noTracefs("mount -t tracefs failed: \(String(cString: strerror(error)))")
        }
        throw Unavailable.noTracefs("/sys/kernel/tracing does not exist")
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }
}
