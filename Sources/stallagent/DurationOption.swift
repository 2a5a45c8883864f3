import ArgumentParser
import StallAgentKit

/// A duration option's value, or the usage error every option gives for a bad one.
/// At most a year: larger values overflow the timespec and deadline arithmetic they feed.
func durationOption(
    _ text: String, _ option: String, minimum: Double = 0, maximum: Double = 366 * 86400,
    examples: String = "1.5s, 250ms, 2m, 30d"
) throws -> Double {
    guard let value = DurationParser.parse(text), value.isFinite else {
        throw ValidationError("--\(option): '\(text)' is not a duration (examples: \(examples))")
    }
    guard value >= minimum, value <= maximum else {
        throw ValidationError("--\(option): '\(text)' is out of range (\(describe(minimum)) to \(describe(maximum)))")
    }
    return value
}

private func describe(_ seconds: Double) -> String {
    seconds >= 86400 ? "\(Int(seconds / 86400))d" : seconds >= 1 ? "\(seconds)s" : "\(Int((seconds * 1000).rounded()))ms"
}
