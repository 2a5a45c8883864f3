import Foundation
import StallReports

/// speedscope's file format (its file-format-spec: `$schema`, `shared.frames`, `profiles`):
/// one sampled profile per stall, weighted in milliseconds of sampling interval, so
/// speedscope's profile switcher walks the stalls and its "Left Heavy" view is the flame graph.
public enum SpeedscopeRenderer {
    public static let schema = "https://www.speedscope.app/file-format-schema.json"

    struct File: Encodable {
        var schema = SpeedscopeRenderer.schema
        var shared: Shared
        var profiles: [Profile]
        var name: String
        var activeProfileIndex: Int
        var exporter: String

        enum CodingKeys: String, CodingKey {
            case schema = "$schema"
            case shared, profiles, name, activeProfileIndex, exporter
        }
    }

    struct Shared: Encodable {
        var frames: [Frame]
    }

    struct Frame: Encodable {
        var name: String
        var file: String?
        var line: Int?

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(name, forKey: .name)
            try c.encodeIfPresent(file, forKey: .file)
            try c.encodeIfPresent(line, forKey: .line)
        }

        enum CodingKeys: String, CodingKey { case name, file, line }
    }

    struct Profile: Encodable {
        var type = "sampled"
        var name: String
        var unit = "milliseconds"
        var startValue: Double
        var endValue: Double
        /// Indices into `shared.frames`, root first.
        var samples: [[Int]]
        var weights: [Double]
    }

    /// `exporter`: "stallagent@VERSION".
    public static func render(_ collection: ReportCollection, exporter: String) throws -> Data {
        var frames: [Frame] = []
        var frameIndex: [StackFrameKey: Int] = [:]
        var profiles: [Profile] = []
        for loaded in collection.reports {
            let report = loaded.report
            let stallStacks = StallStacks(report)
            guard !stallStacks.stacks.isEmpty else { continue }
            let interval = report.samples.intervalSeconds > 0 ? report.samples.intervalSeconds * 1000 : 1
            var samples: [[Int]] = []
            var weights: [Double] = []
            for stack in stallStacks.stacks {
                samples.append(
                    stack.frames.map { key in
                        if let index = frameIndex[key] { return index }
                        let detail = stallStacks.details[key]
                        frameIndex[key] = frames.count
                        // The source file when the report has it, else the module: what tells two
                        // functions of one name apart.
                        let file = detail?.file ?? (key.module.isEmpty ? nil : key.module)
                        frames.append(Frame(name: key.function, file: file, line: detail?.file == nil ? nil : detail?.line))
                        return frames.count - 1
                    })
                weights.append((Double(stack.samples) * interval * 1000).rounded() / 1000)
            }
            profiles.append(
                Profile(
                    name: ViewNames.stallTitle(report), startValue: 0, endValue: weights.reduce(0, +), samples: samples,
                    weights: weights))
        }
        // The longest stall opens first: the one a reader came for.
        let longest = profiles.indices.max { profiles[$0].endValue < profiles[$1].endValue } ?? 0
        let file = File(
            shared: Shared(frames: frames), profiles: profiles, name: "stalls in \(collection.source)", activeProfileIndex: longest,
            exporter: exporter)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var data = try encoder.encode(file)
        data.append(0x0a)
        return data
    }
}
