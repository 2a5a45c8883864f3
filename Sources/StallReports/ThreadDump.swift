import StallDetection
import StallCapture
import StallSymbols

/// One thread as `stallagent dump` shows it.
public struct ThreadDump: Codable, Sendable {
    public struct LockOwner: Codable, Sendable, Equatable {
        public var tid: Int32
        public var name: String?

        package init(tid: Int32, name: String? = nil) {
            self.tid = tid
            self.name = name
        }
    }

    public var tid: Int32
    public var name: String
    /// The kernel's one-letter state (R, S, D, T, …).
    public var state: String
    public var activity: ThreadActivity
    public var detail: String
    public var syscall: String?
    public var lockOwner: LockOwner?
    public var captureMethod: ThreadSnapshot.Method?
    public var pauseMicroseconds: Double?
    public var unwindEnd: UnwindEnd?
    public var frames: [SymbolizedFrame]
    /// Why there is no stack, when there is none.
    public var error: String?
    /// Why Python frames are missing or cut short, when the process runs CPython.
    public var interpreterNote: String?

    package init(
        tid: Int32, name: String, state: String, activity: ThreadActivity, detail: String, syscall: String? = nil, lockOwner: LockOwner? = nil,
        captureMethod: ThreadSnapshot.Method? = nil, pauseMicroseconds: Double? = nil, unwindEnd: UnwindEnd? = nil, frames: [SymbolizedFrame],
        error: String? = nil, interpreterNote: String? = nil
    ) {
        self.tid = tid
        self.name = name
        self.state = state
        self.activity = activity
        self.detail = detail
        self.syscall = syscall
        self.lockOwner = lockOwner
        self.captureMethod = captureMethod
        self.pauseMicroseconds = pauseMicroseconds
        self.unwindEnd = unwindEnd
        self.frames = frames
        self.error = error
        self.interpreterNote = interpreterNote
    }
}

/// A whole `stallagent dump`.
public struct ProcessDump: Codable, Sendable {
    public var schemaVersion = 1
    public var kind = "dump"
    public var pid: Int32
    public var name: String
    public var path: String?
    public var buildId: String?
    public var time: String
    public var threads: [ThreadDump]

    package init(pid: Int32, name: String, path: String? = nil, buildId: String? = nil, time: String, threads: [ThreadDump]) {
        self.pid = pid
        self.name = name
        self.path = path
        self.buildId = buildId
        self.time = time
        self.threads = threads
    }
}
