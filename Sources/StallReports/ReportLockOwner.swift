import StallSymbols

/// The thread holding the lock the main thread waits on, found by the agent (glibc keeps the
/// owner's tid in the mutex), with its stack so the report shows what the holder is doing.
public struct ReportLockOwner: Codable, Sendable, Equatable {
    public var tid: Int32
    public var name: String?
    /// What the owner itself is doing: "waiting on lock 0x…", "blocked in nanosleep", "running".
    public var detail: String
    /// The owner's stack, innermost first; empty when it could not be captured.
    public var frames: [SymbolizedFrame]
    /// Thread ids from the main thread through each owner, e.g. [main, owner, owner's owner];
    /// in a deadlock the chain ends with the tid it loops back to.
    public var waitChain: [Int32]
    /// The chain loops back: waiting will never end.
    public var deadlock: Bool

    public init(
        tid: Int32, name: String? = nil, detail: String, frames: [SymbolizedFrame] = [], waitChain: [Int32] = [],
        deadlock: Bool = false
    ) {
        self.tid = tid
        self.name = name
        self.detail = detail
        self.frames = frames
        self.waitChain = waitChain
        self.deadlock = deadlock
    }

    private enum CodingKeys: String, CodingKey {
        case tid, name, detail, frames, waitChain, deadlock
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(tid, forKey: .tid)
        try c.encode(name, forKey: .name)
        try c.encode(detail, forKey: .detail)
        try c.encode(frames, forKey: .frames)
        try c.encode(waitChain, forKey: .waitChain)
        try c.encode(deadlock, forKey: .deadlock)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        tid = try c.decode(Int32.self, forKey: .tid)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        detail = try c.decodeIfPresent(String.self, forKey: .detail) ?? ""
        frames = try c.decodeIfPresent([SymbolizedFrame].self, forKey: .frames) ?? []
        waitChain = try c.decodeIfPresent([Int32].self, forKey: .waitChain) ?? []
        deadlock = try c.decodeIfPresent(Bool.self, forKey: .deadlock) ?? false
    }
}
