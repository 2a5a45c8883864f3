/// Summary statistics for benchmark and report figures.
public struct Percentiles: Sendable {
    public var count: Int
    public var p50: Double
    public var p90: Double
    public var p99: Double
    public var max: Double
    public var total: Double

    public init(_ values: [Double]) {
        let sorted = values.sorted()
        count = sorted.count
        func at(_ q: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            return sorted[Swift.min(sorted.count - 1, Int((Double(sorted.count - 1) * q).rounded()))]
        }
        p50 = at(0.5)
        p90 = at(0.9)
        p99 = at(0.99)
        max = sorted.last ?? 0
        total = sorted.reduce(0, +)
    }
}
