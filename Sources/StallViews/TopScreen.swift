import Foundation
import StallReports

/// `stallagent top`'s screen: one line per watched process, like `top` or `py-spy top`, cut
/// to the terminal's width (80 columns hold every column).
public enum TopScreen {
    public struct Row: Sendable, Equatable {
        public var pid: Int32
        public var name: String
        /// "loop", "busy", "exited", or the reason of the stall in progress ("hang 1.2s").
        public var state: String
        public var stalled: Bool
        public var turnsPerSecond: Double?
        /// 0…100 over the last refresh.
        public var busyPercent: Double
        /// Longest busy turn that ended in the last refresh, and ever.
        public var longestRecent: Double
        public var longestEver: Double
        public var stalls: Int

        public init(
            pid: Int32, name: String, state: String, stalled: Bool, turnsPerSecond: Double?, busyPercent: Double, longestRecent: Double,
            longestEver: Double, stalls: Int
        ) {
            self.pid = pid
            self.name = name
            self.state = state
            self.stalled = stalled
            self.turnsPerSecond = turnsPerSecond
            self.busyPercent = busyPercent
            self.longestRecent = longestRecent
            self.longestEver = longestEver
            self.stalls = stalls
        }
    }

    public static let header =
        pad("PID", 7, right: true) + " " + pad("NAME", 16) + " " + pad("STATE", 13) + " " + pad("TURNS/S", 7, right: true) + " "
        + pad("BUSY%", 5, right: true) + "  " + pad("LONGEST", 7, right: true) + " " + pad("(EVER)", 9, right: true) + " "
        + pad("STALLS", 6, right: true)

    /// The lines to draw (no escape sequences), each at most `width` columns.
    public static func lines(_ rows: [Row], title: String, width: Int = 80) -> [String] {
        var out = [cut(title, width), cut(header, width)]
        for row in rows {
            let turns = row.turnsPerSecond.map { String(format: "%7.1f", $0) } ?? "      -"
            let line =
                pad(String(row.pid), 7, right: true) + " " + pad(TerminalSanitizer.line(row.name), 16) + " " + pad(row.state, 13) + " "
                + turns + " " + String(format: "%5.1f", row.busyPercent) + "  " + pad(seconds(row.longestRecent), 7, right: true) + " "
                + pad("(" + seconds(row.longestEver) + ")", 9, right: true) + " " + pad(String(row.stalls), 6, right: true)
            out.append(cut(line, width))
        }
        out.append(cut("q or Ctrl-C quits · turns/s and busy over the last second · reports keep being written", width))
        return out
    }

    static func seconds(_ value: Double) -> String {
        if value <= 0 { return "-" }
        return value < 1 ? String(format: "%.0fms", value * 1000) : String(format: "%.2fs", value)
    }

    static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let clipped = text.count > width ? String(text.prefix(width - 1)) + "…" : text
        let space = String(repeating: " ", count: max(0, width - clipped.count))
        return right ? space + clipped : clipped + space
    }

    static func cut(_ line: String, _ width: Int) -> String {
        line.count > width ? String(line.prefix(width)) : line
    }
}
