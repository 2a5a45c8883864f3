import ReportTestSupport
import Foundation
import Testing

@testable import StallReports
@testable import StallViews

@Suite("Reading report directories for view")
struct ReportCollectionTests {
    @Test func readsReportsInTimeOrderWithTheirFoldedStacks() throws {
        let fixtures = ViewFixtures.reports()
        let directory = try ViewFixtures.directory(fixtures.reversed())
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let collection = try ReportCollection.load(directory)
        #expect(collection.reports.map(\.report.id) == [1, 2])
        #expect(collection.reports.map(\.folded) == fixtures.map(\.folded))
        #expect(collection.reports.allSatisfy { $0.jsonPath.hasPrefix(directory + "/") && $0.jsonPath.hasSuffix(".json") })
    }

    @Test func readsAUnitSubdirectoryAndOneReportFile() throws {
        let fixtures = ViewFixtures.reports()
        let directory = try ViewFixtures.directory([fixtures[0]])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let unit = directory + "/nginx.service"
        _ = try ReportWriter(directory: unit, requireSafeOwner: false).write(fixtures[1].report, folded: nil)
        let all = try ReportCollection.load(directory)
        #expect(all.reports.count == 2)
        let one = try ReportCollection.load(all.reports[1].jsonPath)
        #expect(one.reports.map(\.report.id) == [2])
        #expect(one.reports[0].folded == nil)
    }

    @Test func badInputNamesTheProblemAndItsExitCode() throws {
        let missing = ReportFixtures.temporaryDirectory()
        #expect(throws: ViewError.noSuchInput(path: missing)) { try ReportCollection.load(missing) }
        #expect(ViewError.noSuchInput(path: missing).exitCode == 66)

        let empty = ReportFixtures.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: empty) }
        try Data("not a report".utf8).write(to: URL(fileURLWithPath: empty + "/notes.txt"))
        #expect(throws: ViewError.noReports(path: empty)) { try ReportCollection.load(empty) }
        #expect(ViewError.noReports(path: empty).exitCode == 66)

        let corrupt = empty + "/app_1_20261121-092239_hang_1-0000abcd.json"
        try Data("{\"schemaVersion\": 1, \"kind\": ".utf8).write(to: URL(fileURLWithPath: corrupt))
        do {
            _ = try ReportCollection.load(empty)
            Issue.record("a corrupt report was read")
        } catch let error as ViewError {
            guard case .corruptReport(let path, let reason) = error else {
                Issue.record("wrong error \(error)")
                return
            }
            #expect(path == corrupt)
            #expect(reason.contains("not valid JSON"))
            #expect(error.exitCode == 65)
        }

        // A report missing a required key says which.
        try Data("{\"schemaVersion\": 1}".utf8).write(to: URL(fileURLWithPath: corrupt))
        #expect(throws: ViewError.corruptReport(path: corrupt, reason: "no \"kind\" at the top level")) {
            try ReportCollection.load(empty)
        }
    }
}

@Suite("Loop health for view")
struct LoopHealthTests {
    @Test func healthLinesAreReadAndGiveTheirProcessARow() throws {
        let fixtures = ViewFixtures.reports()
        let directory = try ViewFixtures.directory(fixtures)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let report = fixtures[0].report
        let samples = (1...3).map { index in
            LoopHealthSample(
                time: report.span.startTime.addingTimeInterval(Double(index)), seconds: 1, pid: report.process.pid, name: report.process.name,
                hostname: report.hostname, turns: UInt64(100 * index), busySeconds: 0.25 * Double(index), longestTurnSeconds: 0.01,
                evidence: "kernel counter")
        }
        let idle = LoopHealthSample(
            time: report.span.startTime, seconds: 1, pid: 999, name: "quiet", hostname: report.hostname, turns: 50, busySeconds: 0,
            longestTurnSeconds: 0)
        let encoder = JSONEncoder()
        var text = try (samples + [idle]).map { String(decoding: try encoder.encode($0), as: UTF8.self) }.joined(separator: "\n")
        text += "\n{\"time\": \"cut short"
        try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/app_1234.loop.jsonl"))

        let collection = try ReportCollection.load(directory)
        #expect(collection.reports.count == 2)
        #expect(collection.health.count == 4)
        #expect(collection.unreadableHealthLines == 1)
        #expect(collection.health.filter { $0.pid == report.process.pid }.map(\.turns) == [100, 200, 300])

        let page = try ViewPageDataBuilder.build(collection, generator: "test")
        #expect(page.targets.count == 2)
        #expect(page.targets[0].health?.map { $0[2] } == [100, 200, 300])
        #expect(page.targets[0].evidence == "kernel counter")
        #expect(page.targets[1].label == "quiet [999]" && page.targets[1].health?.count == 1)
        #expect(page.loopHealthNote == "1 line(s) of the loop-health files did not parse and were skipped.")
    }

    @Test func withoutHealthFilesThePageSaysWhatIsMissing() throws {
        let directory = try ViewFixtures.directory(ViewFixtures.reports())
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let page = try ViewPageDataBuilder.build(try ReportCollection.load(directory), generator: "test")
        #expect(page.targets.allSatisfy { $0.health == nil })
        #expect(page.loopHealthNote?.contains("no *.loop.jsonl") == true)
    }
}
