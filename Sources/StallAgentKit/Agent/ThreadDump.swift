/// One thread as `stallagent dump` shows it.
public struct ThreadDump: Codable, Sendable {
    public struct LockOwner: Codable, Sendable, Equatable {
        public var tid: Int32
        public var name: String?
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
}
