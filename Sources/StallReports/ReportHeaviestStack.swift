import StallSymbols

/// The heaviest stack with full frames: "Heaviest Stack (28 of 30 samples)".
public struct ReportHeaviestStack: Codable, Sendable, Equatable {
    /// Samples whose innermost function matches this stack's.
    public var samples: Int
    /// Samples considered (those still in the ring).
    public var totalSamples: Int
    /// Innermost first.
    public var frames: [SymbolizedFrame]

    public init(samples: Int, totalSamples: Int, frames: [SymbolizedFrame]) {
        self.samples = samples
        self.totalSamples = totalSamples
        self.frames = frames
    }
}
