/// Lengths of the loop's busy turns — from leaving its wait to the next turn or idle — in
/// fixed buckets, the Linux counterpart of a UI's frame-time histogram. Turns shorter than one
/// probe interval are not seen one by one (the counter only says several happened): they show
/// in the turn count, not here. Bounded: a fixed array, whatever the run's length.
public struct TurnLengthHistogram: Sendable, Equatable {
    /// Upper bounds in seconds; the last bucket is everything longer.
    public static let bounds: [Double] = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    public private(set) var counts = [UInt64](repeating: 0, count: TurnLengthHistogram.bounds.count + 1)
    public private(set) var sum = 0.0
    public private(set) var longest = 0.0

    public init() {}

    public mutating func add(_ seconds: Double) {
        guard seconds >= 0, seconds.isFinite else { return }
        let index = Self.bounds.firstIndex { seconds <= $0 } ?? Self.bounds.count
        counts[index] += 1
        sum += seconds
        longest = max(longest, seconds)
    }

    public var count: UInt64 { counts.reduce(0, +) }
}
