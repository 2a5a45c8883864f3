import Foundation
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif
#if canImport(Glibc)
import Glibc
#endif

/// JUnit and GitHub Actions output of a wrapped run, with a process whose name is hostile to
/// both formats (it becomes `comm`, which reports and annotations carry).
@Suite(.serialized, .tags(.timed)) struct CIOutputTests {
    let agent = FixtureProcess.stallagentURL

    final class JUnitCollector: NSObject, XMLParserDelegate {
        var failures: [[String: String]] = []
        var testcases: [[String: String]] = []
        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if name == "failure" { failures.append(attributes) }
            if name == "testcase" { testcases.append(attributes) }
        }
    }

    @Test func junitAndAnnotationsSurviveHostileNames() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ci-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let hostile = dir.appendingPathComponent("sf%1,2:3\nx<&")
        try FileManager.default.copyItem(at: FixtureProcess.executableURL, to: hostile)
        let junit = dir.appendingPathComponent("stalls.xml")
        let summary = dir.appendingPathComponent("summary.md")
        _ = FileManager.default.createFile(atPath: summary.path, contents: nil)

        let process = Process()
        process.executableURL = agent
        process.arguments = [
            "--report-dir", dir.appendingPathComponent("reports").path, "--junit", junit.path, "--",
            hostile.path, "loop", "--script", "spin:1.2", "--gap", "0.3", "--exit-when-done",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["GITHUB_ACTIONS"] = "true"
        environment["GITHUB_STEP_SUMMARY"] = summary.path
        process.environment = environment
        let out = dir.appendingPathComponent("stdout")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)

        // JUnit: valid XML with one failing testcase whose type is the reason code.
        let parser = XMLParser(data: try Data(contentsOf: junit))
        let collector = JUnitCollector()
        parser.delegate = collector
        #expect(parser.parse(), "invalid XML: \(String(describing: parser.parserError))")
        #expect(collector.failures.count == 1)
        #expect(collector.failures.first?["type"] == "0x8badf00d")
        // The kernel shows a newline in a process name as the two characters \n.
        #expect(collector.testcases.first?["name"]?.contains("sf%1,2:3\\nx<&") == true, "\(collector.testcases)")

        // Annotations: one line each, special characters escaped.
        let stdout = try String(contentsOf: out, encoding: .utf8)
        let annotation = try #require(stdout.split(separator: "\n").first { $0.hasPrefix("::error ") })
        #expect(annotation.contains("title=0x8badf00d hang in sf%251%2C2%3A3\\nx<&["), "\(annotation)")
        #expect(annotation.contains("busy_compute"))

        let table = try String(contentsOf: summary, encoding: .utf8)
        #expect(table.contains("| process | code |"))
        #expect(table.contains("`0x8badf00d`"))
    }

    @Test func cleanRunGivesAPassingTestcase() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ci-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let junit = dir.appendingPathComponent("ok.xml").path
        let result = try runCommand(agent, ["--report-dir", dir.path, "--junit", junit, "--", "/bin/true"])
        #expect(result.status == 0)
        let parser = XMLParser(data: try Data(contentsOf: URL(fileURLWithPath: junit)))
        let collector = JUnitCollector()
        parser.delegate = collector
        #expect(parser.parse())
        #expect(collector.failures.isEmpty)
        #expect(collector.testcases.count == 1)
    }
}
