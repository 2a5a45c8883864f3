import Foundation
import Testing

@testable import StallReports
@testable import StallViews

#if canImport(Glibc)
import Glibc
#endif

/// `stallagent view` on reports the agent wrote from real stalls, opened in a real headless
/// Chromium, and read back by `go tool pprof`.
@Suite(.serialized) struct ViewCommandTests {
    let agent = FixtureProcess.stallagentURL

    /// Watches `executable loop --script SCRIPT` until it exits; the directory its reports went to.
    static func watchedReports(script: String, executable: URL = FixtureProcess.executableURL, extra: [String] = []) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("view-\(UUID().uuidString)").path
        let fixture = try FixtureProcess(["loop", "--script", script, "--gap", "1", "--exit-when-done"] + extra, executable: executable)
        defer { fixture.stop() }
        let result = try runCommand(
            FixtureProcess.stallagentURL,
            [
                "watch", "--pid", "\(fixture.pid)", "--threshold", "0.3s", "--launch-threshold", "0.3s", "--report-dir", directory,
                "--quiet",
            ], timeout: 60)
        try #require(result.status == 0, "\(result.stderr)")
        return directory
    }

    /// A spin, a sleep and a lock stall, shared by the tests below (the agent takes ~5 s).
    static let realReports = Result { try watchedReports(script: "spin:0.7,sleep:0.7,mutex:0.7") }

    func reports(in directory: String) throws -> [LoadedReport] {
        try ReportCollection.load(directory).reports
    }

    @Test(.enabled(if: HeadlessChromium.url != nil, HeadlessChromium.missing))
    func thePageShowsEveryStallAndAClickDrawsItsFlameGraph() throws {
        let directory = try Self.realReports.get()
        let loaded = try reports(in: directory)
        try #require(loaded.count >= 3, "\(loaded.map(\.jsonPath))")
        let page = directory + ".html"
        defer { unlink(page) }
        let result = try runCommand(agent, ["view", directory, "-o", page])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("wrote \(page) (html, \(loaded.count) stalls)"))

        let (dom, seconds, _) = try HeadlessChromium.dumpDOM(page, fragment: "selftest")
        print("view: \(loaded.count) real stalls, chromium start to DOM dump \(String(format: "%.2f", seconds)) s")
        #expect(HeadlessChromium.attribute("data-errors", in: dom) == nil)
        #expect(HeadlessChromium.attribute("data-stall-count", in: dom) == "\(loaded.count)")
        let selftest = try #require(HeadlessChromium.text(ofID: "selftest", in: dom))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(selftest.utf8)) as? [String: Any], "\(selftest)")
        #expect(json["errors"] as? [String] == [])
        #expect(json["stallCount"] as? Int == loaded.count)
        #expect(json["bars"] as? Int == loaded.count)
        // The monitor recorded the loop's health (`*.loop.jsonl`), and the page draws it.
        let health = try ReportCollection.load(directory).health
        #expect(!health.isEmpty && health.allSatisfy { $0.seconds > 0 && $0.busySeconds <= $0.seconds * 1.05 }, "\(health)")
        #expect(health.contains { $0.turns > 0 }, "\(health)")
        #expect(json["healthRows"] as? Int == 1, "\(selftest)")
        // The click on the first stall's bar selected it and drew its flame graph.
        #expect(json["flameNodesBefore"] as? Int == 0)
        #expect(json["clickedStall"] as? Int == 0)
        let first = loaded[0].report
        #expect((json["flameNodes"] as? Int ?? 0) >= 3, "\(json)")
        #expect(json["treeSamples"] as? Int == first.callTree.count)
        #expect(json["badge"] as? String == "\(first.reason.hexCode) \(first.reason.name)")
        #expect(json["culprit"] as? String == first.culpritName)
        #expect(json["zoomedTo"] is String)

        // One row per report with its reason code and culprit, as the JSON says.
        let rows = dom.components(separatedBy: "<tr class=\"click").dropFirst().filter { $0.contains("data-stall=\"") }
        #expect(rows.count == loaded.count)
        for (row, report) in zip(rows, loaded.map(\.report)) {
            let text = HeadlessChromium.decodeEntities(row)
            #expect(text.contains("data-code=\"\(report.reason.hexCode)\""))
            #expect(text.contains(">\(report.reason.hexCode) \(report.reason.name)<"))
            #expect(text.contains(">\(report.culpritName ?? "no stack")<"), "\(text.prefix(600))")
        }
        #expect(Set(loaded.map(\.report.reason.name)).isSuperset(of: ["hang", "blocked", "lock"]))
    }

    @Test(.enabled(if: HeadlessChromium.url != nil, HeadlessChromium.missing))
    func aProcessNamedScriptIsShownAsText() throws {
        // A process whose name (comm, from the link it was started by) and argv are markup.
        let place = FileManager.default.temporaryDirectory.appendingPathComponent("script-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: place.appendingPathComponent("<"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: place) }
        let link = place.appendingPathComponent("<script>")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: FixtureProcess.executableURL)
        let log = place.path + "/</script><img src=x onerror=document.body.setAttribute('data-pwned',1)>"
        let directory = try Self.watchedReports(script: "spin:0.7", executable: link, extra: ["--log", log])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loaded = try reports(in: directory)
        try #require(loaded.count >= 1)
        #expect(loaded[0].report.process.name == "<script>")
        #expect(loaded[0].report.process.commandLine?.contains(log) == true)

        let page = directory + ".html"
        defer { unlink(page) }
        let result = try runCommand(agent, ["view", directory, "-o", page])
        #expect(result.status == 0, "\(result.stderr)")
        let (dom, _, _) = try HeadlessChromium.dumpDOM(page, fragment: "selftest")
        #expect(HeadlessChromium.attribute("data-pwned", in: dom) == nil)
        #expect(HeadlessChromium.attribute("data-errors", in: dom) == nil)
        // Only the page's own three scripts and no image: the names stayed text.
        #expect(dom.components(separatedBy: "<script").count - 1 == 3)
        #expect(!dom.contains("<img"))
        #expect(dom.contains("&lt;script&gt; [\(loaded[0].report.process.pid)]"))
        #expect(dom.contains("&lt;/script&gt;&lt;img src=x onerror="))
        let selftest = try #require(HeadlessChromium.text(ofID: "selftest", in: dom))
        #expect(selftest.contains("\"errors\":[]"))
        #expect(selftest.contains("\"title\":\"<script> [\(loaded[0].report.process.pid)] · stall #"))

        // The SVG too: the name is escaped XML text.
        let svg = directory + ".svg"
        defer { unlink(svg) }
        #expect(try runCommand(agent, ["view", directory, "--format", "svg", "-o", svg]).status == 0)
        let text = try String(contentsOfFile: svg, encoding: .utf8)
        #expect(!text.contains("<img") && text.components(separatedBy: "<script").count - 1 == 1)
    }

    @Test(.enabled(if: HeadlessChromium.url != nil, HeadlessChromium.missing))
    func theSVGFlameGraphZoomsAndSearchesInChromium() throws {
        let directory = try Self.realReports.get()
        let svg = directory + ".svg"
        defer { unlink(svg) }
        let result = try runCommand(agent, ["view", directory, "--format", "svg", "-o", svg])
        #expect(result.status == 0, "\(result.stderr)")
        let (dom, _, _) = try HeadlessChromium.dumpDOM(svg, fragment: "selftest")
        let selftest = try #require(HeadlessChromium.attribute("data-selftest", in: dom))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(selftest.utf8)) as? [String: Any], "\(selftest)")
        // The clicked frame now spans the whole width; frames beside it are hidden.
        let width = try #require(json["width"] as? Double)
        #expect(abs((json["zoomedWidth"] as? Double ?? 0) - width) < 0.5, "\(json)")
        #expect((json["hidden"] as? Int ?? 0) > 0)
        #expect(json["resetShown"] as? Bool == true)
        #expect((json["found"] as? Int ?? 0) >= 1)
        #expect((json["matched"] as? String)?.hasPrefix("Matched: ") == true)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/go"), "Debian's golang-go is not installed (scripts/setup installs it)"))
    func goToolPprofListsTheFoldedStacksTopFunctions() throws {
        let directory = try Self.realReports.get()
        let loaded = try reports(in: directory)
        let profile = directory + ".pb.gz"
        defer { unlink(profile) }
        let result = try runCommand(agent, ["view", directory, "--format", "pprof", "-o", profile])
        #expect(result.status == 0, "\(result.stderr)")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("gohome-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: home) }
        let top = try runCommand(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "HOME=\(home)", "GOCACHE=\(home)/cache", "PPROF_TMPDIR=\(home)", "/usr/bin/go", "tool", "pprof", "-top", "-sample_index=samples",
                "-nodefraction=0", profile,
            ], timeout: 120)
        #expect(top.status == 0, "\(top.stderr)")
        print("go tool pprof -top:\n\(top.stdout)")
        // flat  flat%  sum%  cum  cum%  name
        var flat: [String: Int] = [:]
        for line in top.stdout.split(separator: "\n") {
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            guard words.count >= 6, let count = Int(words[0]), words[1].hasSuffix("%") else { continue }
            if count > 0 { flat[words[5...].joined(separator: " ")] = count }
        }
        // The same from the folded files: samples per innermost function.
        var folded: [String: Int] = [:]
        for report in loaded {
            for line in (report.folded ?? "").split(separator: "\n") {
                let cut = line.lastIndex(of: " ")!
                let leaf = line[..<cut].split(separator: ";").last.map(String.init) ?? ""
                folded[leaf, default: 0] += Int(line[line.index(after: cut)...])!
            }
        }
        #expect(!folded.isEmpty)
        #expect(flat == folded)
        let ranked = { (counts: [String: Int]) in counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.prefix(3).map(\.key) }
        #expect(ranked(flat) == ranked(folded))
        // Labels let pprof pick one reason out.
        let tags = try runCommand(
            URL(fileURLWithPath: "/usr/bin/env"), ["HOME=\(home)", "GOCACHE=\(home)/cache", "/usr/bin/go", "tool", "pprof", "-tags", profile],
            timeout: 120)
        #expect(tags.stdout.contains("reason:") && tags.stdout.contains("fingerprint:") && tags.stdout.contains("target:"), "\(tags.stdout)")
        #expect(tags.stdout.contains("0x8badf00d"))
    }

    @Test func badInputHasClearErrorsAndExitCodes() throws {
        let place = FileManager.default.temporaryDirectory.appendingPathComponent("view-bad-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: place, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: place) }
        let missing = try runCommand(agent, ["view", place.path + "/none"])
        #expect(missing.status == 66)
        #expect(missing.stderr.contains("no such report directory"))
        let empty = try runCommand(agent, ["view", place.path])
        #expect(empty.status == 66)
        #expect(empty.stderr.contains("holds no stall reports"))
        let corrupt = place.appendingPathComponent("app_1_20261127-100000_hang_1-00000001.json")
        try Data("{\"schemaVersion\": 1, \"kind\": \"stall\", ".utf8).write(to: corrupt)
        let bad = try runCommand(agent, ["view", place.path, "-o", place.path + "/out.html"])
        #expect(bad.status == 65)
        #expect(bad.stderr.contains(corrupt.path) && bad.stderr.contains("not a readable stallagent report"))
        #expect(!FileManager.default.fileExists(atPath: place.path + "/out.html"))
        let format = try runCommand(agent, ["view", place.path, "--format", "png"])
        #expect(format.status == 64)
        let directory = try Self.realReports.get()
        let unwritable = try runCommand(agent, ["view", directory, "-o", place.path + "/no/such/dir/out.html"])
        #expect(unwritable.status == 73)
        #expect(unwritable.stderr.contains("cannot write"))
    }
}
