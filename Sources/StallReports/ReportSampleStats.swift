/// How well the stall was sampled: "Duration Sampled: 1.50 s (30 samples, 50 ms interval)".
public struct ReportSampleStats: Codable, Sendable, Equatable {
    /// Stack samples taken during the episode.
    public var count: Int
    /// The configured interval between samples.
    public var intervalSeconds: Double
    /// Time between the first and the latest sample.
    public var sampledSeconds: Double
    /// Samples the ring buffer no longer holds (the call tree and folded stacks lack them).
    public var dropped: Int

    public init(count: Int, intervalSeconds: Double, sampledSeconds: Double, dropped: Int) {
        self.count = count
        self.intervalSeconds = intervalSeconds
        self.sampledSeconds = sampledSeconds
        self.dropped = dropped
    }
}
