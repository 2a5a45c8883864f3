import Foundation

/// Number formatting shared by the renderings, so text and JSON agree on what they round.
enum ReportNumber {
    /// Seconds kept to the microsecond: finer digits are noise from summing probe intervals
    /// and would make JSON values like 1.5200000000000002.
    static func seconds(_ value: Double) -> Double {
        (value * 1e6).rounded() / 1e6
    }

    static func fraction(_ value: Double) -> Double {
        (value * 1e4).rounded() / 1e4
    }

    /// "1.52 s".
    static func duration(_ seconds: Double) -> String {
        String(format: "%.2f s", seconds)
    }

    /// "50 ms", "500 µs", "1.5 s": for intervals.
    static func interval(_ seconds: Double) -> String {
        if seconds >= 1 { return String(format: "%g s", seconds) }
        if seconds >= 0.001 { return String(format: "%g ms", (seconds * 1e4).rounded() / 10) }
        return String(format: "%.0f µs", seconds * 1e6)
    }

    /// "41 µs", "1.3 ms", "2.40 s": for pause times given in microseconds.
    static func micros(_ value: Double) -> String {
        if value < 1000 { return String(format: "%.0f µs", value) }
        if value < 1_000_000 { return String(format: "%.1f ms", value / 1000) }
        return String(format: "%.2f s", value / 1e6)
    }

    /// "96 %", with "<1 %" so a state that happened never reads as 0.
    static func percent(_ fraction: Double) -> String {
        let value = (fraction * 100).rounded()
        if value == 0 && fraction > 0 { return "<1 %" }
        return String(format: "%.0f %%", value)
    }
}
