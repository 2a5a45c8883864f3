import Foundation
import StallDetection
import StallCapture
import StallSymbols

/// One stall report (docs/report-schema.md): the content both the text and the JSON renderings carry.
/// Built from a detector snapshot plus what the agent knows (`StallReportContext`); the JSON
/// schema is documented in docs/report-schema.md and only grows within `schemaVersion` 1.
public struct StallReport: Codable, Sendable {
    public static let currentSchemaVersion = 1

    public var schemaVersion: Int
    /// "stall", or "snapshot" for an on-demand capture.
    public var kind: String
    /// The detector's stall id; a stall's updates keep it.
    public var id: Int
    /// 0 for the first write of a stall, +1 for each rewrite.
    public var revision: Int
    /// Why this revision was written (`StallSnapshotTrigger` raw value).
    public var trigger: String
    /// The reason code printed on the report.
    public var reason: StallReason
    /// What the thread was doing; differs from `reason` only when that is `died` or `snapshot`.
    public var cause: StallReason
    /// "launch" or "loop" (`StallPhase`).
    public var phase: String
    public var deadlock: Bool
    public var process: ReportProcessInfo
    public var thread: ReportThreadInfo
    public var hostname: String
    /// When the stall began and ended, and how long it lasted against its threshold.
    public var span: Span
    public var samples: ReportSampleStats
    public var stateBreakdown: ReportStateBreakdown
    public var stallFrame: SymbolizedFrame?
    public var heaviestStack: ReportHeaviestStack?
    /// Under a synthetic "(root)" node; covers the samples still in the ring.
    public var callTree: CallTreeNode
    public var lockOwner: ReportLockOwner?
    /// Only the modules that some frame of the report uses, by start address.
    public var binaryImages: [ReportBinaryImage]
    public var agent: ReportAgentStats
    public var termination: String?
    /// Which stall this is across reports, and how often it was seen.
    public var recurrence: Recurrence
    /// What the agent's evidence rested on.
    public var evidence: Evidence
    /// The one-sentence "Description:" line.
    public var description: String

    /// When the stall began and ended (wall clock), and how long it lasted.
    public struct Span: Sendable, Equatable {
        public var startTime: Date
        public var endTime: Date
        public var ongoing: Bool
        /// `StallEnding` raw value; nil while ongoing and for snapshots outside a stall.
        public var ending: String?
        /// Stall age, stopped time excluded.
        public var durationSeconds: Double
        public var thresholdSeconds: Double
    }

    /// The same stall (by its fingerprint) reported again: the how-many-th time.
    public struct Recurrence: Sendable, Equatable {
        public var fingerprint: String
        public var occurrence: Int
    }

    /// What told the agent the loop turned and why stacks may be missing.
    public struct Evidence: Sendable, Equatable {
        /// What told the agent the event loop turned (`LoopTurnEvidence` raw value: "kernel
        /// counter", "loop probe", "stack rule"); nil for snapshots and old reports.
        public var loopTurns: String?
        /// Why better evidence was not available (e.g. the kernel refused the counters).
        public var loopTurnsNote: String?
        /// Why there are no stacks when none could be captured (another tracer holds the
        /// target); the stall is then timed from /proc alone. Absent otherwise.
        public var sampling: String?
    }

    public init(snapshot: StallSnapshot, context: StallReportContext) {
        schemaVersion = Self.currentSchemaVersion
        kind = snapshot.isOnDemand ? "snapshot" : "stall"
        id = snapshot.id
        revision = snapshot.revision
        trigger = snapshot.trigger.rawValue
        reason = snapshot.reason
        cause = snapshot.causeReason
        phase = snapshot.phase.rawValue
        deadlock = snapshot.deadlock || snapshot.causeReason == .deadlock || (context.lockOwner?.deadlock ?? false)
        process = context.process
        thread = context.thread
        hostname = context.hostname
        span = Span(
            startTime: Date(timeIntervalSince1970: snapshot.startTime + context.wallClockOffset),
            endTime: Date(timeIntervalSince1970: snapshot.endTime + context.wallClockOffset), ongoing: snapshot.ongoing,
            ending: snapshot.ending?.rawValue, durationSeconds: ReportNumber.seconds(snapshot.duration),
            thresholdSeconds: ReportNumber.seconds(snapshot.threshold))
        samples = ReportSampleStats(
            count: snapshot.sampleCount, intervalSeconds: snapshot.sampleInterval,
            sampledSeconds: ReportNumber.seconds(snapshot.sampledDuration), dropped: snapshot.droppedSampleCount)
        stateBreakdown = ReportStateBreakdown(snapshot.stateBreakdown)
        stallFrame = snapshot.stallFrame.map { frame in
            context.resolveFrame(frame, Self.index(of: frame, in: snapshot))
        }
        heaviestStack = snapshot.heaviestStack.map { heaviest in
            ReportHeaviestStack(
                samples: heaviest.sampleCount, totalSamples: heaviest.totalSamples,
                frames: heaviest.frames.enumerated().map { context.resolveFrame($1, $0) })
        }
        callTree = snapshot.callTree
        lockOwner = context.lockOwner
        agent = context.agent
        termination = context.termination
        recurrence = Recurrence(fingerprint: snapshot.fingerprint, occurrence: context.occurrence)
        let loopTurns = snapshot.isOnDemand ? nil : snapshot.loopTurnEvidence?.rawValue
        evidence = Evidence(
            loopTurns: loopTurns, loopTurnsNote: loopTurns == nil ? nil : context.loopTurnsNote, sampling: context.samplingNote)
        binaryImages = []
        description = ""
        binaryImages = Self.usedImages(context.binaryImages, by: self)
        description = StallReportDescription.sentence(for: self)
    }

    /// The stall frame's position in the latest sample that has it (the tracker takes its
    /// details from the latest sample), so it is resolved as that stack would resolve it.
    private static func index(of frame: SampledFrame, in snapshot: StallSnapshot) -> Int {
        for sample in snapshot.samples.reversed() {
            if let position = sample.frames.firstIndex(of: frame) { return position }
        }
        let key = StallFrameTracker.Key(frame)
        if let frames = snapshot.heaviestStack?.frames,
            let position = frames.firstIndex(where: { StallFrameTracker.Key($0) == key })
        {
            return position
        }
        return 0
    }

    /// Keeps the images a frame names, by path or by module name (call-tree nodes have only the
    /// name), so the section stays short but covers every frame.
    private static func usedImages(_ images: [ReportBinaryImage], by report: StallReport) -> [ReportBinaryImage] {
        var names = Set<String>()
        var paths = Set<String>()
        func note(_ frame: SymbolizedFrame) {
            if let module = frame.module { names.insert(module) }
            if let path = frame.modulePath { paths.insert(path) }
        }
        func note(_ node: CallTreeNode) {
            if !node.module.isEmpty { names.insert(node.module) }
            node.children.forEach(note)
        }
        report.stallFrame.map(note)
        report.heaviestStack?.frames.forEach(note)
        report.lockOwner?.frames.forEach(note)
        note(report.callTree)
        var seen = Set<String>()
        return
            images
            .filter { paths.contains($0.path) || names.contains($0.name) }
            .sorted { $0.start < $1.start }
            .filter { seen.insert("\($0.start)-\($0.path)").inserted }
    }

    /// The frame to name in one-line summaries: the heaviest stack's innermost frame outside
    /// system libraries (libc, the dynamic loader, the vDSO), so a lock or sleep stall names the
    /// program's function rather than the wait wrapper. Not the stall frame: that one must be in
    /// every sample, and the episode's first sample often catches the caller just before the
    /// slow call, which would name the event loop instead of the work.
    public var culpritFrame: SymbolizedFrame? {
        Self.culprit(in: heaviestStack?.frames ?? []) ?? stallFrame
    }

    /// Innermost first. In a JIT runtime (Node) the frames inside the innermost JIT frame
    /// that belong to modules also found outside it are the runtime serving the script
    /// (`Date.now()` → `v8::base::Time::Now`): the script's function is the culprit. A module
    /// seen only inside (a native addon) is the work itself and stays the culprit.
    /// A Python function, when the stack has one, comes first: the interpreter's frames
    /// above it are the same for every program.
    static func culprit(in frames: [SymbolizedFrame]) -> SymbolizedFrame? {
        // The application's own code first (`AppFrameRule`): a sleep in `subprocess.run`,
        // `g_usleep` or a `node:` module is the caller's.
        if let own = frames.first(where: { $0.inApp == true }) { return own }
        // The program's own Python code before the standard library's and installed packages'
        // (a sleep in `subprocess.run` is the caller's; a pytest runner frame never the test's).
        if let own = frames.first(where: { $0.isPython && !isLibraryPython($0) }) { return own }
        if let python = frames.first(where: \.isPython) { return python }
        if let javascript = frames.first(where: \.isJavaScript) { return javascript }
        if let php = frames.first(where: { $0.isPHP && $0.file != nil }) { return php }
        if let ruby = frames.first(where: { $0.isRuby && $0.file != nil }) { return ruby }
        if let jit = frames.firstIndex(where: { $0.module == nil && $0.function != nil }) {
            let runtime = Set(frames[jit...].compactMap(\.module))
            if frames[..<jit].allSatisfy({ isSystemModule($0) || $0.module.map(runtime.contains) ?? true }) {
                return frames[jit]
            }
        }
        return frames.first { !isSystemModule($0) } ?? frames.first
    }

    /// The name a one-line summary gives the culprit. A test that spent its time in a helper
    /// of its own is named by both, `test_primes → sieve` (issue 25): the test is what a CI
    /// reader looks for, the helper is where the time went.
    public var culpritName: String? {
        guard let culprit = culpritFrame else { return nil }
        let name = culprit.function.map { culprit.approximate ? "\($0) (approximate)" : $0 } ?? culprit.displayName
        // The test in the culprit's own language: a Python test above a Python helper, a Rust
        // or Go test function of the application's above its helper.
        let sameKind = { (frame: SymbolizedFrame) in
            culprit.isPython ? frame.isPython : !frame.isScript && frame.inApp == true
        }
        guard culprit.isPython || culprit.inApp == true, !Self.isTestFunction(culprit.function),
            let frames = heaviestStack?.frames, let index = frames.firstIndex(of: culprit),
            // The test is the application's own: hypothesis's `ConjectureRunner.test_function`
            // (site-packages) is named like one and runs every example of a test.
            let test = frames[index...].first(where: { sameKind($0) && $0.inApp != false && Self.isTestFunction($0.function) })?.function
        else { return name }
        return "\(test) → \(name)"
    }

    static func isTestFunction(_ name: String?) -> Bool {
        name.map(StallDetector.isTestFunction) ?? false
    }

    /// Python code that is not the program's own: the standard library, installed packages,
    /// frozen modules.
    static func isLibraryPython(_ frame: SymbolizedFrame) -> Bool {
        frame.file.map(AppFrameRule.isLibraryPython(file:)) ?? false
    }

    static func isSystemModule(_ frame: SymbolizedFrame) -> Bool {
        // By name only: daemons live under /usr/lib too (/usr/lib/postgresql/15/bin/postgres),
        // and a frame in a library such as libssl can be the work itself.
        // No module: JIT code (named from a perf map) is the program's own; a frame with
        // neither module nor name says nothing.
        guard let module = frame.module else { return frame.function == nil }
        return SampledFrame.isSystemModule(module)
    }

    // MARK: - Coding

    private enum CodingKeys: String, CodingKey {
        case schemaVersion, kind, id, revision, trigger, reason, cause, phase, deadlock, process, thread, hostname
        case startTime, endTime, ongoing, ending, durationSeconds, thresholdSeconds, samples, stateBreakdown
        case stallFrame, heaviestStack, callTree, lockOwner, binaryImages, agent, termination, fingerprint
        case occurrence, description, loopTurns, loopTurnsNote, sampling
    }

    // Optional fields are written as null, never left out, so every report has every key.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schemaVersion, forKey: .schemaVersion)
        try c.encode(kind, forKey: .kind)
        try c.encode(id, forKey: .id)
        try c.encode(revision, forKey: .revision)
        try c.encode(trigger, forKey: .trigger)
        try c.encode(reason, forKey: .reason)
        try c.encode(cause, forKey: .cause)
        try c.encode(phase, forKey: .phase)
        try c.encode(deadlock, forKey: .deadlock)
        try c.encode(process, forKey: .process)
        try c.encode(thread, forKey: .thread)
        try c.encode(hostname, forKey: .hostname)
        try c.encode(ReportTime.iso8601(span.startTime), forKey: .startTime)
        try c.encode(ReportTime.iso8601(span.endTime), forKey: .endTime)
        try c.encode(span.ongoing, forKey: .ongoing)
        try c.encode(span.ending, forKey: .ending)
        try c.encode(span.durationSeconds, forKey: .durationSeconds)
        // A wrapped command's launch phase has no limit (infinity): JSON has no such number.
        try c.encode(span.thresholdSeconds.isFinite ? span.thresholdSeconds : nil, forKey: .thresholdSeconds)
        try c.encode(samples, forKey: .samples)
        try c.encode(stateBreakdown, forKey: .stateBreakdown)
        try c.encode(stallFrame, forKey: .stallFrame)
        try c.encode(heaviestStack, forKey: .heaviestStack)
        try c.encode(callTree, forKey: .callTree)
        try c.encode(lockOwner, forKey: .lockOwner)
        try c.encode(binaryImages, forKey: .binaryImages)
        try c.encode(agent, forKey: .agent)
        try c.encode(termination, forKey: .termination)
        try c.encode(recurrence.fingerprint, forKey: .fingerprint)
        try c.encode(recurrence.occurrence, forKey: .occurrence)
        try c.encode(description, forKey: .description)
        try c.encode(evidence.loopTurns, forKey: .loopTurns)
        try c.encode(evidence.loopTurnsNote, forKey: .loopTurnsNote)
        try c.encodeIfPresent(evidence.sampling, forKey: .sampling)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func date(_ key: CodingKeys) throws -> Date {
            let text = try c.decode(String.self, forKey: key)
            guard let value = Self.parseDate(text) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "not an ISO-8601 time: \(text)")
            }
            return value
        }
        schemaVersion = try c.decode(Int.self, forKey: .schemaVersion)
        kind = try c.decode(String.self, forKey: .kind)
        id = try c.decode(Int.self, forKey: .id)
        revision = try c.decodeIfPresent(Int.self, forKey: .revision) ?? 0
        trigger = try c.decodeIfPresent(String.self, forKey: .trigger) ?? ""
        reason = try c.decode(StallReason.self, forKey: .reason)
        cause = try c.decodeIfPresent(StallReason.self, forKey: .cause) ?? reason
        phase = try c.decode(String.self, forKey: .phase)
        deadlock = try c.decodeIfPresent(Bool.self, forKey: .deadlock) ?? false
        process = try c.decode(ReportProcessInfo.self, forKey: .process)
        thread = try c.decode(ReportThreadInfo.self, forKey: .thread)
        hostname = try c.decodeIfPresent(String.self, forKey: .hostname) ?? ""
        span = Span(
            startTime: try date(.startTime), endTime: try date(.endTime), ongoing: try c.decode(Bool.self, forKey: .ongoing),
            ending: try c.decodeIfPresent(String.self, forKey: .ending),
            durationSeconds: try c.decode(Double.self, forKey: .durationSeconds),
            thresholdSeconds: try c.decodeIfPresent(Double.self, forKey: .thresholdSeconds) ?? .infinity)
        samples = try c.decode(ReportSampleStats.self, forKey: .samples)
        stateBreakdown = try c.decode(ReportStateBreakdown.self, forKey: .stateBreakdown)
        stallFrame = try c.decodeIfPresent(SymbolizedFrame.self, forKey: .stallFrame)
        heaviestStack = try c.decodeIfPresent(ReportHeaviestStack.self, forKey: .heaviestStack)
        callTree = try c.decode(CallTreeNode.self, forKey: .callTree)
        lockOwner = try c.decodeIfPresent(ReportLockOwner.self, forKey: .lockOwner)
        binaryImages = try c.decodeIfPresent([ReportBinaryImage].self, forKey: .binaryImages) ?? []
        agent = try c.decode(ReportAgentStats.self, forKey: .agent)
        termination = try c.decodeIfPresent(String.self, forKey: .termination)
        recurrence = Recurrence(
            fingerprint: try c.decode(String.self, forKey: .fingerprint),
            occurrence: try c.decodeIfPresent(Int.self, forKey: .occurrence) ?? 1)
        description = try c.decodeIfPresent(String.self, forKey: .description) ?? ""
        evidence = Evidence(
            loopTurns: try c.decodeIfPresent(String.self, forKey: .loopTurns),
            loopTurnsNote: try c.decodeIfPresent(String.self, forKey: .loopTurnsNote),
            sampling: try c.decodeIfPresent(String.self, forKey: .sampling))
    }

    /// Reads what `ReportTime.iso8601` writes, and plain ISO-8601 with or without fractions.
    static func parseDate(_ text: String) -> Date? {
        if let date = ReportTime.parse(text) { return date }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        for format in ["yyyy-MM-dd'T'HH:mm:ss.SSSZZZZZ", "yyyy-MM-dd'T'HH:mm:ssZZZZZ"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
