/// Finds the stall frame: the innermost frame, identified by function AND frame address (CFA),
/// that is present in every sample of the episode — the activation doing the work in progress
/// (docs/architecture.md, "Detection model"). The CFA makes recursion come out right: the same function at another stack
/// depth is another activation and does not count as "still there".
///
/// Kept incrementally as the intersection of every sample's frame set, so it covers the whole
/// episode even after the ring has dropped its first samples; a frame that vanished once can
/// never come back into the intersection, which is exactly the "present in every sample" rule.
///
/// One exception, at the start: a loop leaves its wait a little before it calls the handler
/// that stalls (reading the socket, picking the callback), and a sample taken in between —
/// likelier on a loaded machine — would rule the handler out and leave the loop's dispatch
/// function as the stall frame. So a frame that first appears within `entryGrace` of the
/// episode's start and is in every sample from then on counts as present throughout.
///
/// And one at the end, the mirror image: the handler returns a little before the loop is back
/// in its wait, and a sample taken in between named `Handle._run` or `_run_once` as a Python
/// stall's frame beside two CPU hogs. So the frame of an ended episode (`stallFrame(endingAt:)`)
/// leaves out the samples of its last `exitGrace`, unless that would leave none.
public struct StallFrameTracker: Sendable {
    /// What identifies an activation.
    public struct Key: Hashable, Sendable {
        public var function: String
        public var cfa: UInt64

        public init(function: String, cfa: UInt64) {
            self.function = function
            self.cfa = cfa
        }

        public init(_ frame: SampledFrame) {
            self.init(function: frame.function, cfa: frame.cfa)
        }
    }

    /// nil until the first sample; then the keys common to every committed sample.
    private var common: Set<Key>?
    /// Keys that appeared within the grace and are in every sample since (not in `common`).
    private var entered: Set<Key> = []
    private let start: Double
    private let entryGrace: Double
    private let exitGrace: Double
    /// The latest committed sample's frames, to order the common keys innermost-first and to
    /// report the frame's current details (its address can differ between samples for frame 0).
    private var latestFrames: [SampledFrame] = []
    /// Samples of the last `exitGrace`, not yet in `common`: an ended episode may leave them out.
    private var pending: [(time: Double, frames: [SampledFrame])] = []
    public private(set) var sampleCount = 0

    /// `start`: when the episode began; `entryGrace`: how late after it a frame may first
    /// appear and still count as present throughout; `exitGrace`: how early before the end of
    /// an ended episode it may leave (0: the strict rule).
    public init(start: Double = 0, entryGrace: Double = 0, exitGrace: Double = 0) {
        self.start = start
        self.entryGrace = entryGrace
        self.exitGrace = exitGrace
    }

    /// Adds a sample's stack (innermost first) taken at `time`; empty stacks (failed unwinds)
    /// are ignored so one bad capture cannot erase the stall frame.
    public mutating func add(_ frames: [SampledFrame], at time: Double? = nil) {
        guard !frames.isEmpty else { return }
        sampleCount += 1
        guard exitGrace > 0, let time else {
            commit(frames, at: time)
            return
        }
        pending.append((time, frames))
        while let first = pending.first, first.time < time - exitGrace {
            pending.removeFirst()
            commit(first.frames, at: first.time)
        }
    }

    private mutating func commit(_ frames: [SampledFrame], at time: Double?) {
        latestFrames = frames
        let keys = Set(frames.lazy.map(Key.init))
        if var shared = common {
            let before = shared
            if !shared.isEmpty { shared.formIntersection(keys) }
            common = shared
            entered.formIntersection(keys)
            if entryGrace > 0, let time, time - start <= entryGrace {
                entered.formUnion(keys.subtracting(before))
            }
        } else {
            common = keys
        }
    }

    /// The innermost frame present in every sample, as seen in the latest sample; nil before
    /// any sample or when no frame is shared by all of them. The application's own frame wins
    /// over the libraries and runtime above it (`g_usleep` and `clock_nanosleep` are the same in
    /// every program, the handler that called them is not); without one, an interpreted frame
    /// (a Python function) wins over the interpreter's C frames.
    public var stallFrame: SampledFrame? {
        var all = self
        for sample in all.pending { all.commit(sample.frames, at: sample.time) }
        return all.resolved
    }

    /// The stall frame of an episode that ended at `end`: the samples of its last `exitGrace`
    /// are left out, unless no other sample is left.
    public func stallFrame(endingAt end: Double) -> SampledFrame? {
        var early = self
        for sample in early.pending where sample.time <= end - exitGrace { early.commit(sample.frames, at: sample.time) }
        return early.common == nil ? stallFrame : early.resolved
    }

    private var resolved: SampledFrame? {
        guard let shared = common else { return nil }
        let keys = shared.union(entered)
        guard !keys.isEmpty else { return nil }
        return latestFrames.first { $0.isApp == true && keys.contains(Key($0)) }
            ?? latestFrames.first { $0.isInterpreted && keys.contains(Key($0)) }
            ?? latestFrames.first { keys.contains(Key($0)) }
    }

    public mutating func reset() {
        common = nil
        entered = []
        latestFrames = []
        pending = []
        sampleCount = 0
    }
}
