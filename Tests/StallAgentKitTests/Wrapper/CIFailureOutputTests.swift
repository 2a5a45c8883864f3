import Foundation
import StallWrapper
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A timed-out or killed run is red in every CI output (JUnit, annotations, step summary);
/// annotations start on a line of their own; an unwritable --junit stops the run before it
/// starts.
@Suite(.serialized, .tags(.laneTwo)) struct CIFailureOutputTests {
    let agent = FixtureProcess.stallagentURL
    let fixtures = FixtureProcess.executableURL.path

    /// Failures with their text (the report, stack included).
    final class FailureCollector: NSObject, XMLParserDelegate {
        var failures: [(attributes: [String: String], text: String)] = []
        var testcases = 0
        private var inFailure = false
        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if name == "testcase" { testcases += 1 }
            if name == "failure" {
                failures.append((attributes, ""))
                inFailure = true
            }
        }
        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if name == "failure" { inFailure = false }
        }
        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if inFailure { failures[failures.count - 1].text += string }
        }
    }

    struct CIRun {
        var status: Int32
        var stdout: String
        var summary: String
        var junit: FailureCollector
    }

    func runInCI(_ arguments: [String], in dir: URL) throws -> CIRun {
        let junit = dir.appendingPathComponent("junit.xml")
        let summary = dir.appendingPathComponent("summary.md")
        let out = dir.appendingPathComponent("stdout")
        _ = FileManager.default.createFile(atPath: summary.path, contents: nil)
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        let process = Process()
        process.executableURL = agent
        process.arguments = ["--report-dir", dir.appendingPathComponent("reports").path, "--junit", junit.path] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["GITHUB_ACTIONS"] = "true"
        environment["GITHUB_STEP_SUMMARY"] = summary.path
        process.environment = environment
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let parser = XMLParser(data: try Data(contentsOf: junit))
        let collector = FailureCollector()
        parser.delegate = collector
        #expect(parser.parse(), "invalid XML: \(String(describing: parser.parserError))")
        return CIRun(
            status: process.terminationStatus, stdout: try String(contentsOf: out, encoding: .utf8),
            summary: try String(contentsOf: summary, encoding: .utf8), junit: collector)
    }

    /// --timeout: a failing testcase per watched process with its stack, an ::error per
    /// snapshot starting on a fresh line although the command's last output had no newline,
    /// and a red step summary.
    @Test func timedOutRunIsRedEverywhere() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cito-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try runInCI(["--timeout", "3s", "--", "/bin/sh", "-c", "printf 'partial line'; '\(fixtures)' sleep >/dev/null"], in: dir)
        #expect(run.status == 124)

        let timeouts = run.junit.failures.filter { $0.attributes["type"] == "timeout" }
        #expect(timeouts.count >= 2, "one per watched process (sh and the fixture): \(run.junit.failures.map(\.attributes))")
        #expect(run.junit.failures.count == run.junit.testcases, "a timed-out run has no passing testcase")
        #expect(timeouts.contains { $0.text.contains("sleep_forever") }, "the stack is in the failure text")

        #expect(run.stdout.hasPrefix("partial line\n::error title="), "\(run.stdout)")
        // The fixture, a descendant asleep for good, is also a blocked stall of its own (issue
        // 27: found after its start, it is no longer taken for a runner), which the timeout ends.
        let errors = run.stdout.split(separator: "\n").filter { $0.hasPrefix("::error ") }
        #expect(errors.filter { $0.hasPrefix("::error title=stallagent%3A --timeout 3.00 s expired::") }.count == timeouts.count, "\(errors)")
        #expect(errors.count == run.junit.failures.count, "\(errors)")
        #expect(errors.contains { $0.contains("sleep_forever") }, "\(errors)")

        #expect(run.summary.contains("❌"), "\(run.summary)")
        #expect(run.summary.contains("timed out"))
        #expect(!run.summary.contains("no main-thread stalls"))
        #expect(run.summary.contains("sleep_forever"))
    }

    /// --kill-after: the killed process's stall fails in JUnit (named as terminated) and the
    /// step summary is red.
    @Test func killedRunIsRed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cika-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try runInCI(["--kill-after", "1.2s", "--", fixtures, "loop", "--script", "spin:60", "--gap", "0.3"], in: dir)
        #expect(run.status == 124)
        #expect(run.junit.failures.count == 1)
        #expect(run.junit.failures.first?.attributes["message"]?.contains("terminated") == true)
        #expect(run.junit.failures.first?.text.contains("busy_compute") == true)
        #expect(run.stdout.split(separator: "\n").contains { $0.hasPrefix("::error ") && $0.contains("terminated") }, "\(run.stdout)")
        #expect(run.summary.contains("❌"), "\(run.summary)")
        #expect(run.summary.contains("killed by --kill-after"))
    }

    /// A reader that went away (`stallagent … | head`) does not change the status: the late
    /// annotations meet EPIPE, not SIGPIPE.
    @Test func closedReaderDoesNotChangeTheStatus() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cipipe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = """
            ( GITHUB_ACTIONS=true '\(agent.path)' --report-dir '\(dir.path)/reports' --timeout 1s -- sleep 30 2>/dev/null
              echo $? > '\(dir.path)/status' ) | true
            cat '\(dir.path)/status'
            """
        let result = try CleanProcess.runShell(script)
        #expect(result.stdout == "124\n", "\(result.stdout) \(result.stderr)")
    }

    /// The byte before a regular file's write position is read back; a pipe cannot tell, so
    /// the answer there is "not at a line start" (a blank line rather than a lost annotation).
    @Test func lineStartOfStandardOutput() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ls-\(UUID().uuidString)").path
        defer { unlink(path) }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(OutputLineStart.isAtLineStart(fd: fd))
        _ = write(fd, "one line\n", 9)
        #expect(OutputLineStart.isAtLineStart(fd: fd))
        _ = write(fd, "partial", 7)
        #expect(!OutputLineStart.isAtLineStart(fd: fd))
        var pipeFDs: [Int32] = [0, 0]
        try #require(pipe(&pipeFDs) == 0)
        defer {
            close(pipeFDs[0])
            close(pipeFDs[1])
        }
        #expect(!OutputLineStart.isAtLineStart(fd: pipeFDs[1]))
    }

    /// An unwritable --junit is refused with 125 before the command runs.
    @Test func unwritableJUnitFailsBeforeTheCommandStarts() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ciju-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let marker = dir.appendingPathComponent("ran").path
        // /proc takes no new files, even from root; a directory is not a file; nor is a
        // path whose directory does not exist.
        for junit in ["/proc/stallagent-\(getpid()).xml", dir.path, dir.appendingPathComponent("missing/junit.xml").path] {
            let result = try runCommand(
                agent, ["--report-dir", dir.appendingPathComponent("reports").path, "--junit", junit, "--", "/bin/sh", "-c", "echo > '\(marker)'"])
            #expect(result.status == 125, "\(junit): \(result.stderr)")
            #expect(result.stderr.contains("--junit \(junit)"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: marker), "the command ran despite --junit \(junit)")
        }
    }
}
