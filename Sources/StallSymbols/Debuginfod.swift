import CDebuginfod
import Dispatch
import Foundation
import Synchronization
import StallProc

/// How symbolization may use the debuginfod servers of `$DEBUGINFOD_URLS` for a module
/// whose build-id has no debug file on this machine (what eu-stack, gdb and perf do).
public enum DebuginfodUse: Hashable, Sendable {
    case off
    /// Wait for the download (bounded): one-shot commands, which symbolize with the target
    /// already running again.
    case wait
    /// Use a file fetched earlier, else start the fetch in the background and go on without
    /// it: the watch, whose probe loop must never wait on a network.
    case background
}

/// The debuginfod client: libdebuginfod (elfutils' own client, with its cache and its
/// negative cache) behind a deadline, one download at a time, each build-id asked once.
public final class Debuginfod: Sendable {
    public static let shared = Debuginfod(environment: ProcessInfo.processInfo.environment)

    public enum Outcome: Equatable, Sendable {
        case fetched(path: String)
        case failed(reason: String)
    }

    /// `$DEBUGINFOD_URLS` when set and libdebuginfod loads; nil means off.
    public let urls: String?
    /// Wall time allowed per build-id, however the server behaves (`$DEBUGINFOD_MAXTIME`,
    /// default 30 s, at most 600 s).
    public let maxSeconds: Double
    /// Said when a blocking fetch starts or fails (the dump prints it on stderr).
    public var notice: (@Sendable (String) -> Void)? {
        get { state.withLock { $0.notice } }
        set { state.withLock { $0.notice = newValue } }
    }

    private struct State {
        var outcomes: [String: Outcome] = [:]
        var waiting: [String: [@Sendable (Outcome) -> Void]] = [:]
        var notice: (@Sendable (String) -> Void)?
        /// When a server last let a fetch run into the deadline: later build-ids are not
        /// asked for a while, or a dump of a process with twenty modules would wait twenty
        /// deadlines on a hung server.
        var timedOutAt: Double?
    }
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "stallagent.debuginfod")
    private let fetchedCount = Atomic<Int>(0)

    init(environment: [String: String]) {
        let urls = environment["DEBUGINFOD_URLS"]?.trimmingCharacters(in: .whitespaces) ?? ""
        self.urls = urls.isEmpty || sa_debuginfod_available() == 0 ? nil : urls
        let max = environment["DEBUGINFOD_MAXTIME"].flatMap(Double.init) ?? 30
        maxSeconds = max.isFinite ? Swift.min(Swift.max(max, 1), 600) : 30
        // Under systemd (DynamicUser, no home) the client's cache goes to the unit's
        // CacheDirectory; elsewhere libdebuginfod's default (~/.cache/debuginfod_client).
        if self.urls != nil, environment["DEBUGINFOD_CACHE_PATH"] == nil,
            let cache = SystemdDirectories(environment: environment).cache.first
        {
            setenv("DEBUGINFOD_CACHE_PATH", cache + "/debuginfod", 0)
        }
    }

    public var enabled: Bool { urls != nil }

    static let quietAfterTimeout = 300.0

    /// Bumped after each successful download: symbolizers drop names cached without it.
    public var generation: Int { fetchedCount.load(ordering: .relaxed) }

    /// The outcome for a build-id already asked about, without waiting.
    public func outcome(_ buildID: String) -> Outcome? {
        state.withLock { $0.outcomes[buildID] }
    }

    public func isPending(_ buildID: String) -> Bool {
        state.withLock { $0.waiting[buildID] != nil }
    }

    /// Seconds all blocking fetches of this process may wait together: `maxSeconds`. Each
    /// download had its own deadline only, and twelve unknown build-ids against a slow server
    /// made one dump wait 32.6 s, one after another (issue 27). Downloads already started go
    /// on in the background; the waiting stops.
    private let waitedSeconds = Mutex(0.0)

    /// Fetches and waits (at most what is left of `maxSeconds` for all blocking fetches).
    public func fetch(_ buildID: String, module: String) -> Outcome {
        if let known = outcome(buildID) { return known }
        let left = maxSeconds - waitedSeconds.withLock { $0 }
        guard left > 0 else {
            return .failed(reason: "skipped: this command already waited \(Int(maxSeconds)) s for debuginfod ($DEBUGINFOD_MAXTIME)")
        }
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Outcome?>(nil)
        let noticeHandler = notice
        noticeHandler?("fetching debug info for \(module) (build-id \(buildID)) from debuginfod (up to \(Int(left.rounded(.up))) s)")
        request(buildID) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        let started = MonotonicTime.seconds()
        let answered = done.wait(timeout: .now() + left) == .success
        waitedSeconds.withLock { $0 += MonotonicTime.seconds() - started }
        let outcome =
            answered
            ? result.withLock { $0 } ?? .failed(reason: "no answer")
            : .failed(reason: "gave up: this command's \(Int(maxSeconds)) s for debuginfod ($DEBUGINFOD_MAXTIME) are spent")
        if case .failed(let reason) = outcome { noticeHandler?("no debug info for \(module) from debuginfod: \(reason)") }
        return outcome
    }

    /// Starts a fetch unless one ran or runs; `then` is called on the client's queue.
    public func prefetch(_ buildID: String, then: (@Sendable (Outcome) -> Void)? = nil) {
        request(buildID) { then?($0) }
    }

    /// Calls `then` once the build-id's fetch ends (at once if it already has).
    public func whenDone(_ buildID: String, then: @escaping @Sendable (Outcome) -> Void) {
        if let known = outcome(buildID) {
            queue.async { then(known) }
            return
        }
        request(buildID, then)
    }

    private func request(_ buildID: String, _ then: @escaping @Sendable (Outcome) -> Void) {
        guard enabled else {
            then(.failed(reason: "DEBUGINFOD_URLS is not set or libdebuginfod.so.1 is missing"))
            return
        }
        guard buildID.count >= 8, buildID.count <= 128, buildID.allSatisfy(\.isHexDigit) else {
            then(.failed(reason: "malformed build-id"))
            return
        }
        enum Next {
            case done(Outcome)
            case start, wait
        }
        let now = MonotonicTime.seconds()
        let next: Next = state.withLock { state in
            if let known = state.outcomes[buildID] { return .done(known) }
            if let timedOut = state.timedOutAt, now - timedOut < Self.quietAfterTimeout {
                return .done(.failed(reason: "skipped: a debuginfod server timed out \(Int(now - timedOut)) s ago"))
            }
            if state.waiting[buildID] != nil {
                state.waiting[buildID]!.append(then)
                return .wait
            }
            state.waiting[buildID] = [then]
            return .start
        }
        switch next {
        case .done(let outcome): then(outcome)
        case .wait: break
        case .start: queue.async { self.run(buildID) }
        }
    }

    private func run(_ buildID: String) {
        var path: UnsafeMutablePointer<CChar>?
        let status = buildID.withCString { sa_debuginfod_find_debuginfo($0, maxSeconds, &path) }
        let outcome: Outcome
        if status == 0, let path {
            outcome = .fetched(path: String(cString: path))
            free(path)
            fetchedCount.add(1, ordering: .relaxed)
        } else {
            outcome = .failed(reason: Self.describe(status))
        }
        let waiting = state.withLock { state in
            state.outcomes[buildID] = outcome
            if status == -ETIME { state.timedOutAt = MonotonicTime.seconds() }
            return state.waiting.removeValue(forKey: buildID) ?? []
        }
        for callback in waiting { callback(outcome) }
    }

    static func describe(_ status: Int32) -> String {
        switch -status {
        case ENOENT: return "no server has it"
        case ETIME: return "gave up after the deadline ($DEBUGINFOD_MAXTIME)"
        case ENOSYS: return "debuginfod is off"
        default: return String(cString: strerror(-status))
        }
    }
}
