import Foundation
import Testing

@testable import StallReports

#if canImport(Glibc)
import Glibc
#endif

/// `stallagent symbolicate` on a report captured from a stripped binary with no debug file
/// reproduces what the agent shows live for the `-g` build.
@Suite(.serialized) struct SymbolicateCommandTests {
    let agent = FixtureProcess.stallagentURL

    func reportFromStrippedBinary(_ fixture: NativeFixture) throws -> (json: String, text: String) {
        let directory = fixture.directory.appendingPathComponent("reports-\(UUID().uuidString)").path
        let process = try FixtureProcess([], executable: fixture.strippedBare)
        defer { process.stop() }
        let result = try runCommand(
            agent,
            [
                "watch", "--pid", "\(process.pid)", "--launch-threshold", "0.3s", "--threshold", "0.3s", "--report-dir",
                directory, "--duration", "1.2s", "--quiet",
            ], timeout: 30)
        try #require(result.status == 0, "\(result.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory)
        let json = try #require(files.first { $0.hasSuffix(".json") }, "\(files)")
        return (directory + "/" + json, directory + "/" + json.replacingOccurrences(of: ".json", with: ".txt"))
    }

    func report(_ path: String) throws -> StallReport {
        try JSONDecoder().decode(StallReport.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Reports gathered from several hosts (one directory per host, a unit's directory under
    /// one): `symbolicate DIR` names every report's frames, and `view DIR` draws them all, each
    /// process under its host's name (issue 30).
    @Test func aDirectoryGatheredFromHostsIsSymbolicatedAndDrawnWhole() throws {
        let fixture = try DebugFileTests.fixture.get()
        let gathered = fixture.directory.appendingPathComponent("gathered-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: gathered) }
        var paths: [String] = []
        for (host, sub) in [("host-a", "app.service"), ("host-b", "")] {
            let (json, text) = try reportFromStrippedBinary(fixture)
            let directory = gathered.appendingPathComponent(host).appendingPathComponent(sub)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            // As from another machine: its hostname in the report.
            var data = try String(contentsOfFile: json, encoding: .utf8)
            data = data.replacingOccurrences(of: "\"hostname\" : \"", with: "\"hostname\" : \"\(host)-")
            let target = directory.appendingPathComponent((json as NSString).lastPathComponent).path
            try data.write(toFile: target, atomically: true, encoding: .utf8)
            try FileManager.default.copyItem(atPath: text, toPath: directory.appendingPathComponent((text as NSString).lastPathComponent).path)
            paths.append(target)
        }
        let result = try runCommand(agent, ["symbolicate", gathered.path, "--debug-dir", fixture.debugDirectory.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("in 2 of 2 reports"), "\(result.stdout)")
        for path in paths {
            #expect(try report(path).callTree.first(function: "process_requests") != nil, "\(path)")
        }
        let page = gathered.appendingPathComponent("page.html").path
        let view = try runCommand(agent, ["view", gathered.path, "-o", page])
        #expect(view.status == 0, "\(view.stderr)")
        #expect(view.stderr.contains("2 stalls"), "\(view.stderr)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.contains("host-a-") && html.contains("host-b-"), "the page names each process's host")

        // A directory with no report: said, exit 66; a report that cannot be read: named, 65.
        let empty = gathered.appendingPathComponent("empty").path
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let none = try runCommand(agent, ["symbolicate", empty])
        #expect(none.status == 66 && none.stderr.contains("no reports"), "\(none.stderr)")
        try "{ not json".write(toFile: gathered.appendingPathComponent("host-b/broken.json").path, atomically: true, encoding: .utf8)
        let broken = try runCommand(agent, ["symbolicate", gathered.path])
        #expect(broken.status == 65, "\(broken.stderr)")
        #expect(broken.stderr.contains("broken.json"), "\(broken.stderr)")
        #expect(broken.stdout.contains("in 2 of 3 reports"), "\(broken.stdout)")
    }

    @Test func offlineSymbolicationReproducesTheOnlineResult() throws {
        let fixture = try DebugFileTests.fixture.get()
        let online = DebugFileTests().summary(try DebugFileTests().moduleFrames(fixture.unstripped))
        let (json, text) = try reportFromStrippedBinary(fixture)
        let before = try report(json)
        let moduleFrames = { (r: StallReport) in
            (r.heaviestStack?.frames ?? []).filter { $0.modulePath == fixture.strippedBare.path }
        }
        // Captured without debug info: no names in the module, but what offline needs.
        #expect(moduleFrames(before).allSatisfy { $0.file == nil && $0.buildId == fixture.buildID && $0.moduleOffset != nil })
        #expect(!moduleFrames(before).contains { $0.function == "process_requests" })

        let result = try runCommand(agent, ["symbolicate", json, "--debug-dir", fixture.debugDirectory.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("symbolicated"))
        let after = try report(json)
        #expect(DebugFileTests().summary(moduleFrames(after)) == online)
        #expect(after.recurrence.fingerprint == before.recurrence.fingerprint)
        #expect(after.callTree.first(function: "process_requests") != nil)
        let rendered = try String(contentsOfFile: text, encoding: .utf8)
        #expect(rendered.contains("wait_for_input [inlined] (debuginfo.c:"))
        #expect(rendered.contains("process_requests + "))
        // No temporary files left behind.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: (json as NSString).deletingLastPathComponent)
        #expect(leftovers.allSatisfy { !$0.hasPrefix(".") })

        // Again, with nothing to find: nothing is lost.
        let again = try runCommand(agent, ["symbolicate", json])
        #expect(again.status == 0)
        #expect(DebugFileTests().summary(moduleFrames(try report(json))) == online)
    }

    @Test func badInputHasClearErrorsAndExitCodes() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("symbolicate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = try runCommand(agent, ["symbolicate", directory.appendingPathComponent("none.json").path])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("cannot read report"))
        let garbage = directory.appendingPathComponent("garbage.json")
        try Data("{\"schemaVersion\": 1, \"kind\": ".utf8).write(to: garbage)
        let bad = try runCommand(agent, ["symbolicate", garbage.path])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("not a stallagent report"))
        let noDir = try runCommand(agent, ["symbolicate", garbage.path, "--debug-dir", "/nonexistent-debug"])
        #expect(noDir.status == 64)
        #expect(noDir.stderr.contains("--debug-dir"))
    }
}
