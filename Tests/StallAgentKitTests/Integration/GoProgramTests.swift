import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Go programs are not watched: their goroutines move between threads, and the main thread's
/// futex waits are the scheduler's. Before, `stallagent -- go test` reported the `go` tool
/// waiting for its test binary as a `blocked` stall of the whole run, and the test binary's
/// slow tests not at all (issue 25).
@Suite(.serialized) struct GoProgramTests {
    static let go = "/usr/bin/go"
    let agent = FixtureProcess.stallagentURL

    /// Builds a Go program that sleeps `seconds` in a fresh directory.
    func sleeper(_ work: URL, seconds: Int) throws -> String {
        try "package main\nimport \"time\"\nfunc main() { time.Sleep(\(seconds) * time.Second) }\n"
            .write(to: work.appendingPathComponent("main.go"), atomically: true, encoding: .utf8)
        let binary = work.appendingPathComponent("sleeper").path
        let build = try runCommand(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["GOCACHE=\(work.path)/cache", "HOME=\(work.path)", Self.go, "build", "-o", binary, work.appendingPathComponent("main.go").path],
            timeout: 180)
        try #require(build.status == 0, "\(build.stderr)")
        return binary
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: GoProgramTests.go), "needs go (scripts/setup installs golang-go)"))
    func aGoProgramIsNotWatchedAndSaysSo() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("go-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let binary = try sleeper(work, seconds: 3)
        let reports = work.appendingPathComponent("reports").path

        // Wrapped, the command itself: no report, the reason said once, counted in the
        // summary, and the green run is not passed off as watched (87).
        let wrapped = try runCommand(agent, ["--report-dir", reports, "--threshold", "1s", "--", binary], timeout: 60)
        #expect(wrapped.status == 87, "\(wrapped.stderr)")
        #expect(wrapped.stderr.contains("sleeper ["), "\(wrapped.stderr)")
        #expect(wrapped.stderr.contains("is a Go program"), "\(wrapped.stderr)")
        #expect(wrapped.stderr.contains("1 not watched (Go program: sleeper)"), "\(wrapped.stderr)")
        #expect(!wrapped.stderr.contains("stall #"), "\(wrapped.stderr)")
        let written = (try? FileManager.default.contentsOfDirectory(atPath: reports)) ?? []
        #expect(!written.contains { $0.hasSuffix(".json") }, "\(written)")

        // A shell that execs it: the exec is where the watch stops.
        let shim = try runCommand(agent, ["--report-dir", reports, "--", "/bin/sh", "-c", "sleep 0.3; exec '\(binary)'"], timeout: 60)
        #expect(shim.status == 87, "\(shim.stderr)")
        #expect(shim.stderr.contains("a Go program") && shim.stderr.contains("not watched any more"), "\(shim.stderr)")
        #expect(!shim.stderr.contains("stall #"), "\(shim.stderr)")

        // --pid: refused with exit 5 and the reason, the process untouched.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        try process.run()
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        let watch = try runCommand(agent, ["--pid", "\(process.processIdentifier)", "--duration", "1s"], timeout: 60)
        #expect(watch.status == 5, "\(watch.stderr)")
        #expect(watch.stderr.contains("process \(process.processIdentifier) is a Go program"), "\(watch.stderr)")
        #expect(process.isRunning)
    }
}
