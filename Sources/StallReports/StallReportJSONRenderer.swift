import Foundation

/// The JSON form of a report (docs/report-schema.md): pretty-printed with sorted keys so that
/// two reports diff cleanly, and without escaped slashes so paths stay greppable.
public enum StallReportJSONRenderer {
    public static func render(_ r: StallReport) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var data = try encoder.encode(r)
        data.append(0x0a)
        return data
    }

    /// Reads a report back (tools, tests).
    public static func decode(_ data: Data) throws -> StallReport {
        try JSONDecoder().decode(StallReport.self, from: data)
    }
}
