import Foundation

/// The pauses a benchmark fixture measured in itself (`stall-fixtures spin-timed --gaps`):
/// every gap over 5 µs between two consecutive clock reads, on CLOCK_MONOTONIC — the same
/// clock the agent times its captures with, so each capture can be matched to the pause the
/// target felt.
public struct TargetGapLog {
    public var iterations: UInt64
    public var seconds: Double
    public var gaps: [(start: UInt64, length: UInt64)]

    public init(path: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var lines = text.split(separator: "\n")[...]
        var iterations: UInt64 = 0
        var seconds = 0.0
        if let header = lines.popFirst() {
            for word in header.split(separator: " ") {
                let parts = word.split(separator: "=")
                guard parts.count == 2 else { continue }
                if parts[0] == "iterations" { iterations = UInt64(parts[1]) ?? 0 }
                if parts[0] == "seconds" { seconds = Double(parts[1]) ?? 0 }
            }
        }
        self.iterations = iterations
        self.seconds = seconds
        gaps = lines.compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 2, let start = UInt64(parts[0]), let length = UInt64(parts[1]) else { return nil }
            return (start, length)
        }.sorted { $0.start < $1.start }
    }

    /// The longest gap overlapping [start, end]: the pause a capture in that window caused.
    public func pause(during start: UInt64, _ end: UInt64) -> UInt64 {
        var longest: UInt64 = 0
        var low = 0
        var high = gaps.count
        while low < high {
            let mid = (low + high) / 2
            if gaps[mid].start + gaps[mid].length < start { low = mid + 1 } else { high = mid }
        }
        var index = low
        while index < gaps.count && gaps[index].start <= end {
            longest = max(longest, gaps[index].length)
            index += 1
        }
        return longest
    }
}
