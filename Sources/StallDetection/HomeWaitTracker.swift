/// Tells the event loop's own idle wait (its "home wait") from a wait nested inside work.
///
/// PostgreSQL's `pg_sleep()` and lock waits block in `WaitLatch → epoll_wait`, Node's
/// `execSync` in a nested `epoll_pwait`: the same system call as the idle loop, reached from
/// deeper in the stack. A call site is its PC and stack pointer as `/proc/…/syscall` shows them,
/// so telling them apart costs nothing per probe and never needs a stack walk. The rules:
/// - The first idle-set wait seen is home.
/// - A wait shallower than every home (a higher stack pointer: the stack grows down) is home,
///   and earlier homes that were seen only a few times were nested waits seen first (an agent
///   attached during `pg_sleep`) and stop being home.
/// - Any other wait is nested (work) until it has been entered `promotionEntries` times: a
///   loop turns through its wait again and again, a nested wait inside one request rarely. This
///   also recovers a program that waited once high in `main` before entering a deeper loop.
/// Pure: the agent reports each wait it sees; no clock, no files.
public struct HomeWaitTracker: Sendable {
    public struct Site: Hashable, Sendable {
        public var pc: UInt64
        public var sp: UInt64
        public init(pc: UInt64, sp: UInt64) {
            self.pc = pc
            self.sp = sp
        }
    }

    public enum Verdict: Sendable, Equatable {
        case home
        case nested
    }

    public static let promotionEntries = 32

    public private(set) var homes: Set<Site> = []
    private var entries: [Site: Int] = [:]

    public init() {}

    /// True once a home wait is known: the thread runs an event loop.
    public var knowsLoop: Bool { !homes.isEmpty }

    /// Classifies a wait the thread is in now. `newEntry`: the thread entered this wait since
    /// the previous observation (it was elsewhere then, or the loop-turn counter moved), so
    /// seeing the same long wait on many probes counts once.
    public mutating func classify(_ site: Site, newEntry: Bool) -> Verdict {
        if newEntry || entries[site] == nil {
            // Bounded: a program whose wait depth keeps changing must not grow this forever.
            if entries.count >= 4096 { entries = entries.filter { homes.contains($0.key) } }
            entries[site, default: 0] += 1
        }
        if homes.contains(site) { return .home }
        if homes.isEmpty {
            homes.insert(site)
            return .home
        }
        let count = entries[site] ?? 0
        if let shallowest = homes.map(\.sp).max(), site.sp > shallowest {
            homes = homes.filter { (entries[$0] ?? 0) >= Self.promotionEntries }
            homes.insert(site)
            return .home
        }
        if count >= Self.promotionEntries {
            homes.insert(site)
            return .home
        }
        return .nested
    }

    /// Forgets everything (the target exec'd or was replaced).
    public mutating func reset() {
        homes = []
        entries = [:]
    }
}
