import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 27, item 4: paths a target's owner controls. O_NOFOLLOW guards only a path's last
/// component; the owner of a program can make a directory on the way a link — its module's
/// `.debug/` directory, where a `.gnu_debuglink` is looked up, pointing at `/dev` — and the
/// root agent opened whatever lay there (a watchdog device arms on open, a tape rewinds).
@Suite struct PathTrustTests {
    let agent = FixtureProcess.stallagentURL

    /// A FIFO stands in for the device: a writer blocked in open(2) is released the moment
    /// anyone opens it for reading, so whether the agent opened it shows.
    @Test(.enabled(if: geteuid() == 0))
    func attack10_debugLinkThroughALinkedDirectoryNeverOpensWhatIsNotARegularFile() throws {
        let scratch = try HostileScratch("debuglink")
        let app = scratch.path("app")
        let elsewhere = scratch.path("elsewhere")
        try FileManager.default.createDirectory(atPath: app, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        let victim = try scratch.fixtureCopy(named: "app/victim")
        try NativeFixture.run("strip", ["--strip-debug", victim])
        let placeholder = app + "/victim.debug"
        try "not debug information".write(toFile: placeholder, atomically: true, encoding: .utf8)
        try NativeFixture.run("objcopy", ["--add-gnu-debuglink=" + placeholder, victim])
        unlink(placeholder)
        let fifo = elsewhere + "/victim.debug"
        try #require(mkfifo(fifo, 0o644) == 0)
        try #require(symlink(elsewhere, app + "/.debug") == 0)

        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/bin/sh")
        writer.arguments = ["-c", "exec 3>'\(fifo)'; echo opened"]
        let writerOutput = Pipe()
        writer.standardOutput = writerOutput
        try writer.run()
        defer {
            if writer.isRunning { kill(writer.processIdentifier, SIGKILL) }
            writer.waitUntilExit()
        }

        let target = try FixtureProcess(
            ["loop", "--script", "spin:0.8,spin:0.8", "--gap", "0.3"], executable: URL(fileURLWithPath: victim))
        defer { target.stop() }
        let reports = scratch.path("reports")
        let result = try runCommand(
            agent,
            ["--pid", "\(target.pid)", "--report-dir", reports, "--threshold", "0.4s", "--launch-threshold", "0.4s", "--duration", "2.5s"],
            timeout: 30)
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect(!hostileJSONReports(in: reports).isEmpty, "\(result.stderr.suffix(2000))")
        usleep(200_000)
        #expect(writer.isRunning, "the agent opened the FIFO behind \(app)/.debug")
    }
}
