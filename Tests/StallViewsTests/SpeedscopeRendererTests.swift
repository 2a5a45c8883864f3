import Foundation
import Testing

@testable import StallReports
@testable import StallViews

/// Checked against speedscope's file format (src/lib/file-format-spec.ts, published as
/// https://www.speedscope.app/file-format-schema.json) field by field: the keys each object
/// may have, their types, and the rules the spec states in its comments.
@Suite("speedscope files")
struct SpeedscopeRendererTests {
    static let units: Set<String> = ["none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"]

    func file() throws -> (json: [String: Any], collection: ReportCollection) {
        let collection = ReportCollection(
            source: "/var/lib/stallagent", reports: ViewFixtures.reports().map { LoadedReport(report: $0.report, jsonPath: "x.json", folded: $0.folded) })
        let data = try SpeedscopeRenderer.render(collection, exporter: "stallagent@0.5.0")
        return (try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any]), collection)
    }

    @Test func theFileObjectHasTheSpecsFieldsAndNoOthers() throws {
        let (json, _) = try file()
        // File: $schema (the constant), shared, profiles; name, activeProfileIndex, exporter (0.6.0+).
        #expect(Set(json.keys) == ["$schema", "shared", "profiles", "name", "activeProfileIndex", "exporter"])
        #expect(json["$schema"] as? String == "https://www.speedscope.app/file-format-schema.json")
        #expect(json["name"] is String)
        #expect((json["exporter"] as? String)?.hasPrefix("stallagent@") == true)
        let profiles = try #require(json["profiles"] as? [[String: Any]])
        let active = try #require(json["activeProfileIndex"] as? Int)
        #expect(profiles.indices.contains(active))
        // shared: { frames: Frame[] }; Frame: name (string), file?, line?, col? (numbers).
        let shared = try #require(json["shared"] as? [String: Any])
        #expect(Set(shared.keys) == ["frames"])
        let frames = try #require(shared["frames"] as? [[String: Any]])
        #expect(!frames.isEmpty)
        for frame in frames {
            #expect(Set(frame.keys).isSubset(of: ["name", "file", "line", "col"]))
            #expect(frame["name"] is String)
            if let file = frame["file"] { #expect(file is String) }
            if let line = frame["line"] { #expect(line is Int) }
        }
    }

    @Test func eachProfileIsASampledProfileAsTheSpecDefinesIt() throws {
        let (json, _) = try file()
        let frameCount = ((json["shared"] as? [String: Any])?["frames"] as? [Any])?.count ?? 0
        let profiles = try #require(json["profiles"] as? [[String: Any]])
        #expect(profiles.count == 2)
        for profile in profiles {
            // SampledProfile: type, name, unit, startValue, endValue, samples, weights.
            #expect(Set(profile.keys) == ["type", "name", "unit", "startValue", "endValue", "samples", "weights"])
            #expect(profile["type"] as? String == "sampled")
            #expect(profile["name"] is String)
            #expect(Self.units.contains(profile["unit"] as? String ?? ""))
            let start = try #require(profile["startValue"] as? Double)
            let end = try #require(profile["endValue"] as? Double)
            // "This must be greater than or equal to the startValue."
            #expect(end >= start)
            // samples: SampledStack[] (number[] of indices into the frames array);
            // weights: "Should have the same length as the samples array."
            let samples = try #require(profile["samples"] as? [[Int]])
            let weights = try #require(profile["weights"] as? [Double])
            #expect(samples.count == weights.count)
            #expect(samples.allSatisfy { stack in !stack.isEmpty && stack.allSatisfy { frameCount > $0 && $0 >= 0 } })
            #expect(weights.allSatisfy { $0 > 0 })
            #expect(abs(weights.reduce(0, +) - (end - start)) < 0.001)
        }
    }

    @Test func stacksAreTheFoldedStacksRootFirstWeightedBySamplingTime() throws {
        let (json, collection) = try file()
        let frames = try #require((json["shared"] as? [String: Any])?["frames"] as? [[String: Any]])
        let profiles = try #require(json["profiles"] as? [[String: Any]])
        for (profile, loaded) in zip(profiles, collection.reports) {
            let samples = try #require(profile["samples"] as? [[Int]])
            let weights = try #require(profile["weights"] as? [Double])
            let interval = loaded.report.samples.intervalSeconds * 1000
            let lines = zip(samples, weights).map { stack, weight in
                stack.map { frames[$0]["name"] as? String ?? "?" }.joined(separator: ";") + " \(Int((weight / interval).rounded()))\n"
            }
            #expect(lines.sorted().joined() == loaded.folded)
            #expect(profile["name"] as? String == ViewNames.stallTitle(loaded.report))
        }
        // The source line the report knows (the heaviest stack's frames) rides on the frame;
        // a frame only in the call tree names its module instead.
        let leafB = try #require(frames.first { $0["name"] as? String == "leafB" })
        #expect(leafB["file"] as? String == "leafB.c")
        #expect(leafB["line"] is Int)
        let leafA = try #require(frames.first { $0["name"] as? String == "leafA" })
        #expect(leafA["file"] as? String == "app" && leafA["line"] == nil)
        // The heaviest stall opens first.
        let ends = profiles.map { $0["endValue"] as? Double ?? 0 }
        #expect(json["activeProfileIndex"] as? Int == ends.firstIndex(of: ends.max()!))
    }
}
