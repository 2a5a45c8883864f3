import Foundation
import StallReports

/// How every picture names a target and a stall, so the HTML, the SVG, speedscope and pprof
/// say the same thing.
public enum ViewNames {
    /// "app [1234]", with the unit when the service found the process through one.
    public static func target(_ report: StallReport) -> String {
        let base = "\(report.process.name) [\(report.process.pid)]"
        return report.process.unit.map { "\(base) · \($0)" } ?? base
    }

    /// "app [1234] #3 0x8badf00d hang 2.01 s".
    public static func stallTitle(_ report: StallReport) -> String {
        "\(target(report)) #\(report.id) \(report.reason.hexCode) \(report.reason.name) \(duration(report.span.durationSeconds))"
    }

    public static func duration(_ seconds: Double) -> String {
        if seconds < 1 { return String(format: "%.0f ms", seconds * 1000) }
        if seconds < 60 { return String(format: "%.2f s", seconds) }
        return String(format: "%.0f min %.0f s", (seconds / 60).rounded(.down), seconds.truncatingRemainder(dividingBy: 60))
    }

    /// "file.c:42" for a frame that has a source line.
    public static func sourceLine(_ file: String?, _ line: Int?) -> String? {
        guard let file else { return nil }
        return line.map { "\(file):\($0)" } ?? file
    }
}
