import StallDetection
import StallSymbols

/// What the agent knows beyond detection that a report needs: who the target is, how to turn
/// sampled frames into full frames, the lock owner, and what watching cost.
public struct StallReportContext {
    public var process: ReportProcessInfo
    public var thread: ReportThreadInfo
    /// Add to a monotonic time (seconds, the detector's clock) to get Unix time.
    public var wallClockOffset: Double
    /// The full frame for a sampled frame at its index in its stack (0 = innermost); the index
    /// matters because callers' return addresses are looked up at address - 1.
    public var resolveFrame: (SampledFrame, Int) -> SymbolizedFrame
    /// Every module mapped in the target; the report keeps those its frames use.
    public var binaryImages: [ReportBinaryImage]
    public var lockOwner: ReportLockOwner?
    public var agent: ReportAgentStats
    /// e.g. "terminated by stallagent with SIGABRT after 5.00 s"; nil when the agent did not act.
    public var termination: String?
    /// How many times this fingerprint has been seen, this one included (1 = first).
    public var occurrence: Int
    public var hostname: String
    /// Why the loop-turn evidence is not the best kind (shown once per report).
    public var loopTurnsNote: String?
    /// Why the stack could not be sampled (e.g. "cannot sample: traced by PID 12 (strace)").
    public var samplingNote: String?

    public init(
        process: ReportProcessInfo, thread: ReportThreadInfo, wallClockOffset: Double,
        resolveFrame: @escaping (SampledFrame, Int) -> SymbolizedFrame, binaryImages: [ReportBinaryImage] = [],
        lockOwner: ReportLockOwner? = nil, agent: ReportAgentStats = ReportAgentStats(), termination: String? = nil,
        occurrence: Int = 1, hostname: String = "", loopTurnsNote: String? = nil, samplingNote: String? = nil
    ) {
        self.loopTurnsNote = loopTurnsNote
        self.samplingNote = samplingNote
        self.process = process
        self.thread = thread
        self.wallClockOffset = wallClockOffset
        self.resolveFrame = resolveFrame
        self.binaryImages = binaryImages
        self.lockOwner = lockOwner
        self.agent = agent
        self.termination = termination
        self.occurrence = occurrence
        self.hostname = hostname
    }

    /// A frame that carries only what detection knew (function, module, address): for tests
    /// and for frames the agent could not symbolize again.
    public static func unresolvedFrame(_ frame: SampledFrame, index: Int) -> SymbolizedFrame {
        SymbolizedFrame(
            index: index, address: frame.address, stackPointer: frame.cfa, module: frame.module, modulePath: nil,
            buildId: nil, moduleOffset: nil, function: frame.function, functionOffset: nil, approximate: false)
    }
}
