/// One frame found by unwinding a snapshot, before symbolization.
public struct UnwoundFrame: Equatable, Sendable {
    /// The pc for frame 0, the return address for the others.
    public var address: UInt64
    /// The stack pointer in this frame (the callee's CFA): with the function it identifies
    /// one activation, so recursion and re-entry can be told apart.
    public var stackPointer: UInt64
    public var isSignalFrame: Bool
    /// RBP in this frame, where the unwind knew it: a V8 frame keeps its function at a fixed
    /// slot below it (`V8FrameReader`). nil for frames recovered by a frame-record search.
    public var framePointer: UInt64?

    package init(address: UInt64, stackPointer: UInt64, isSignalFrame: Bool, framePointer: UInt64? = nil) {
        self.address = address
        self.stackPointer = stackPointer
        self.isSignalFrame = isSignalFrame
        self.framePointer = framePointer
    }

    /// One frame is one activation: the same code at the same stack address. The frame
    /// pointer is what the unwind happened to know of it (a frame-record search knows none).
    public static func == (lhs: UnwoundFrame, rhs: UnwoundFrame) -> Bool {
        lhs.address == rhs.address && lhs.stackPointer == rhs.stackPointer && lhs.isSignalFrame == rhs.isSignalFrame
    }

    /// The address to symbolize: a return address points after the call, possibly into the
    /// next function or line, so callers are looked up one byte earlier.
    public func lookupAddress(isInnermost: Bool) -> UInt64 {
        isInnermost || isSignalFrame || address == 0 ? address : address - 1
    }
}

/// Why an unwind stopped: the honest end of a stack trace.
public enum UnwindEnd: String, Sendable, Codable {
    /// libunwind reached the outermost frame.
    case complete
    /// Frame limit reached.
    case truncatedAtLimit
    /// A frame needed a register the snapshot does not have (captured without a stop).
    case missingRegister
    /// A frame needed stack memory beyond the copied part.
    case outsideCopiedStack
    /// No unwind information for an address (JIT code, corrupt stack) and no frame pointer.
    case noUnwindInfo
    /// The stack did not grow towards older frames: corrupt or garbage.
    case badFrame
    /// The next return address points outside executable memory: what the unwind found
    /// there is data, so the stack ends rather than show it as a frame.
    case notCode
    /// A word the unwind needed changed between the reads before and after a ptrace stop
    /// (`ThreadSnapshot.changedWords`): the thread left the frames past it meanwhile.
    case stackChanged
}

public struct UnwoundStack: Sendable {
    public var frames: [UnwoundFrame]
    public var end: UnwindEnd
    /// Interpreter frames read with the stack, spliced in when it is symbolized.
    public var python: PythonStack?
    /// JavaScript functions of V8 frames, by frame index: they name those frames when the
    /// stack is symbolized.
    public var javascript: [Int: JavaScriptFrame] = [:]
    /// PHP calls read beside the stack, spliced in when it is symbolized.
    public var php: PHPStack?
    /// Ruby calls read beside the stack, spliced in when it is symbolized.
    public var ruby: RubyStack?

    public init(frames: [UnwoundFrame], end: UnwindEnd) {
        self.frames = frames
        self.end = end
    }
}
