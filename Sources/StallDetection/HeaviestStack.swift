/// The "most time-consuming stack" of an episode, as iOS stutter monitors pick it: samples are
/// grouped by their top (innermost) function, the group with most samples wins, ties go to
/// the group seen most recently, and the group's most recent full stack represents it.
public struct HeaviestStack: Hashable, Codable, Sendable {
    /// The most recent full stack of the winning group, innermost first.
    public var frames: [SampledFrame]
    /// Samples in the winning group ("28 of 30 samples").
    public var sampleCount: Int
    /// Samples considered in all groups.
    public var totalSamples: Int
    /// When `frames` was sampled.
    public var sampleTime: Double

    public init(frames: [SampledFrame], sampleCount: Int, totalSamples: Int, sampleTime: Double) {
        self.frames = frames
        self.sampleCount = sampleCount
        self.totalSamples = totalSamples
        self.sampleTime = sampleTime
    }

    /// The function the group is keyed by.
    public var topFunction: String { frames.first?.function ?? "" }
}
