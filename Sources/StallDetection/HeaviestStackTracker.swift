/// Keeps the heaviest-stack statistics of an episode incrementally, over every sample of the
/// episode (not only those still in the ring), in O(1) per sample.
public struct HeaviestStackTracker: Sendable {
    /// Samples are grouped by top function; the module is part of the key so that two
    /// libraries' `main`/`run`/`unknown+0x…` symbols do not merge.
    /// With interpreter frames, the innermost script function is part of the key too: two
    /// Python tests sleeping in the same `time.sleep` share every native frame (down to the
    /// stack address), and must not make one group whose latest stack names the other test.
    public struct GroupKey: Hashable, Sendable {
        public var function: String
        public var module: String
        public var script: String?

        public init(function: String, module: String, script: String? = nil) {
            self.function = function
            self.module = module
            self.script = script
        }

        public init(_ frame: SampledFrame) {
            self.init(function: frame.function, module: frame.module)
        }

        init(stack frames: [SampledFrame]) {
            self.init(
                function: frames[0].function, module: frames[0].module,
                script: frames.first(where: \.isInterpreted)?.function)
        }
    }

    private struct Group: Sendable {
        var count: Int
        var lastSequence: Int
        var lastFrames: [SampledFrame]
        var lastTime: Double
    }

    private var groups: [GroupKey: Group] = [:]
    private var sequence = 0
    /// The current winner. Maintained on each add: only the group just added to changed, it is
    /// the most recent, so it wins whenever its count reaches the leader's.
    public private(set) var leader: GroupKey?
    public private(set) var totalSamples = 0

    public init() {}

    /// Adds a sample's stack (innermost first); empty stacks (failed unwinds) are ignored.
    public mutating func add(_ frames: [SampledFrame], at time: Double) {
        guard !frames.isEmpty else { return }
        let key = GroupKey(stack: frames)
        sequence += 1
        totalSamples += 1
        var group = groups[key] ?? Group(count: 0, lastSequence: 0, lastFrames: [], lastTime: time)
        group.count += 1
        group.lastSequence = sequence
        group.lastFrames = frames
        group.lastTime = time
        groups[key] = group
        if let current = leader, current != key, let leading = groups[current], leading.count > group.count {
            return
        }
        leader = key
    }

    public mutating func add(_ sample: StackSample) {
        add(sample.frames, at: sample.time)
    }

    /// Samples in a group so far.
    public func count(for key: GroupKey) -> Int {
        groups[key]?.count ?? 0
    }

    public var heaviest: HeaviestStack? {
        guard let key = leader, let group = groups[key] else { return nil }
        return HeaviestStack(
            frames: group.lastFrames, sampleCount: group.count, totalSamples: totalSamples, sampleTime: group.lastTime)
    }

    public mutating func reset() {
        groups.removeAll(keepingCapacity: true)
        sequence = 0
        leader = nil
        totalSamples = 0
    }
}
