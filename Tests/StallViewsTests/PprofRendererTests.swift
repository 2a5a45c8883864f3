import Foundation
import Testing

@testable import StallReports
@testable import StallViews

@Suite("pprof profiles")
struct PprofRendererTests {
    @Test func aGzippedProfileWithSamplesLocationsFunctionsMappingsAndLabels() throws {
        let fixtures = ViewFixtures.reports()
        let collection = ReportCollection(
            source: "/r", reports: fixtures.map { LoadedReport(report: $0.report, jsonPath: "x.json", folded: $0.folded) })
        let data = try PprofRenderer.render(collection)
        #expect(data.prefix(2) == Data([0x1f, 0x8b]))
        let profile = try Perftools_Profiles_Profile(serializedBytes: try Gzip.decompress(data))
        let strings = profile.stringTable
        #expect(strings.first == "")
        func text(_ index: Int64) -> String { strings[Int(index)] }
        #expect(profile.sampleType.map { "\(text($0.type))/\(text($0.unit))" } == ["samples/count", "wall/nanoseconds"])
        #expect(text(profile.periodType.type) == "wall" && profile.period == 50_000_000)

        let locations = Dictionary(uniqueKeysWithValues: profile.location.map { ($0.id, $0) })
        let functions = Dictionary(uniqueKeysWithValues: profile.function.map { ($0.id, $0) })
        let mappings = Dictionary(uniqueKeysWithValues: profile.mapping.map { ($0.id, $0) })
        #expect(Set(profile.mapping.map { text($0.buildID) }) == ["9f1cabcdef", "c0ffee"])

        // Flat samples per leaf function, and whole stacks, as in the folded files.
        var folded: [String: Int] = [:]
        for sample in profile.sample {
            let names = try sample.locationID.reversed().map { id -> String in
                let location = try #require(locations[id])
                if location.mappingID != 0 { #expect(mappings[location.mappingID] != nil) }
                return text(try #require(functions[location.line[0].functionID]).name)
            }
            #expect(sample.value.count == 2 && sample.value[1] == sample.value[0] * 50_000_000)
            let labels = Dictionary(uniqueKeysWithValues: sample.label.map { (text($0.key), text($0.str)) })
            #expect(Set(labels.keys) == ["target", "reason", "code", "fingerprint", "stall"])
            #expect(labels["target"] == "stall-fixtures [1234]")
            let report = try #require(fixtures.first { "\($0.report.process.pid)#\($0.report.id)" == labels["stall"] }).report
            #expect(labels["reason"] == report.reason.name && labels["code"] == report.reason.hexCode)
            #expect(labels["fingerprint"] == report.recurrence.fingerprint)
            folded[names.joined(separator: ";"), default: 0] += Int(sample.value[0])
        }
        let expected = fixtures.compactMap(\.folded).joined().split(separator: "\n").map { line -> (String, Int) in
            let cut = line.lastIndex(of: " ")!
            return (String(line[..<cut]), Int(line[line.index(after: cut)...])!)
        }
        #expect(folded == Dictionary(expected, uniquingKeysWith: +))

        // The source lines and addresses the report has (for the heaviest stack's frames) ride
        // on the locations; leafA, only in the call tree, has none.
        let leafB = try #require(profile.function.first { text($0.name) == "leafB" })
        #expect(text(leafB.filename) == "leafB.c")
        let location = try #require(profile.location.first { $0.line.first?.functionID == leafB.id })
        #expect(location.line[0].line > 0 && location.address > 0 && location.mappingID != 0)
        let leafA = try #require(profile.function.first { text($0.name) == "leafA" })
        #expect(text(leafA.filename) == "")
        #expect(profile.timeNanos > 0 && profile.durationNanos > 0)
    }

    @Test func gzipRoundTrips() throws {
        let text = Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let packed = try Gzip.compress(text)
        #expect(try Gzip.decompress(packed) == text)
        #expect(try Gzip.decompress(Gzip.compress(Data())) == Data())
    }
}
