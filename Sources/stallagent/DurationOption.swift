import ArgumentParser
import StallAgentKit

/// A duration option's value, or the usage error every option gives for a bad one.
func durationOption(_ text: String, _ option: String, minimum: Double = 0, examples: String = "1.5s, 250ms, 2m, 30d") throws -> Double {
    guard let value = DurationParser.parse(text), value >= minimum else {
        throw ValidationError("--\(option): '\(text)' is not a duration (examples: \(examples))")
    }
    return value
}
