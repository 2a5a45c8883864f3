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
    @Test(.tags(.hostile), .enabled(if: geteuid() == 0, "needs root (the agent as root is what is attacked)"))
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

    /// `--metrics-file` and `--state-dir` below a directory the attacker owns: after the agent
    /// started, the attacker moves the real directories aside and plants links to a
    /// directory of root's. Root must keep writing where it started, never through the links.
    @Test(.tags(.hostile), .enabled(if: geteuid() == 0, "needs root (the agent as root is what is attacked)"))
    func attack11_metricsAndStateAreNotWrittenThroughLinksPlantedLater() throws {
        let scratch = try HostileScratch("planted")
        let attacker = scratch.path("attacker")
        let roots = scratch.path("roots")
        for directory in [attacker, attacker + "/metrics", attacker + "/state", roots + "/fingerprints"] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        chmod(attacker, 0o755)
        #expect(chown(attacker, 65534, 65534) == 0)
        let target = try FixtureProcess(["loop", "--script", "spin:0.8,spin:0.8,spin:0.8", "--gap", "0.5"])
        defer { target.stop() }
        let agent = try BackgroundAgent(
            [
                "--pid", "\(target.pid)", "--report-dir", scratch.path("reports"), "--threshold", "0.4s", "--launch-threshold", "0.4s",
                "--metrics-file", attacker + "/metrics/m.prom", "--metrics-interval", "0.2s", "--state-dir", attacker + "/state",
                "--duration", "3s",
            ], stderrPath: scratch.path("agent.stderr"))
        try #require(agent.waitFor("watching"), "\(agent.stderr)")
        usleep(600_000)
        #expect(FileManager.default.fileExists(atPath: attacker + "/metrics/m.prom"), "\(agent.stderr)")
        // The attacker's move: both directories aside, links to root's in their place.
        for name in ["metrics", "state"] {
            #expect(rename(attacker + "/" + name, attacker + "/" + name + ".old") == 0)
            #expect(symlink(roots, attacker + "/" + name) == 0)
        }
        let exit = agent.waitForExit(timeout: 30)
        #expect(exit?.status == 0, "\(agent.stderr)")
        let planted = (try? FileManager.default.contentsOfDirectory(atPath: roots)) ?? []
        let plantedState = (try? FileManager.default.contentsOfDirectory(atPath: roots + "/fingerprints")) ?? []
        #expect(planted == ["fingerprints"] && plantedState.isEmpty, "root wrote through the links: \(planted) \(plantedState)")
        // Where the agent started: the metrics kept being replaced, the state was saved.
        let saved = (try? FileManager.default.contentsOfDirectory(atPath: attacker + "/state.old/fingerprints")) ?? []
        #expect(saved.contains { $0.hasSuffix(".json") && !$0.hasPrefix(".") }, "\(saved) \(agent.stderr)")
        #expect(FileManager.default.fileExists(atPath: attacker + "/metrics.old/m.prom"))
    }
}
