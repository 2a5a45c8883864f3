import Foundation
import Testing

@testable import StallHost

#if canImport(Glibc)
import Glibc
#endif

/// Issue 27: a pidfile is trusted as systemd trusts one, so that no file an unprivileged user
/// can write picks the process a root agent watches or kills.
@Suite(.serialized) struct PidfileTrustTests {
    func scratch() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pidfile-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        chmod(path, 0o755)
        return path
    }

    func write(_ pid: Int32, to path: String, mode: mode_t = 0o644) throws {
        unlink(path)
        try "\(pid)\n".write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, mode)
    }

    @Test(.tags(.hostile), .enabled(if: getuid() == 0, "needs root to give files to another user"))
    func attack16_onlyAPidfileNoOneElseCouldWriteIsTrusted() throws {
        let target = try FixtureProcess(["idle"])
        defer { target.stop() }
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/app.pid"

        try write(target.pid, to: file)
        #expect(TargetResolver.resolvePidfile(file) == .running(target.pid))

        chown(file, 65534, 65534)
        guard case .notRunning(let owned) = TargetResolver.resolvePidfile(file) else {
            Issue.record("trusted a file owned by nobody")
            return
        }
        #expect(owned.contains("owned by uid 65534"), "\(owned)")

        try write(target.pid, to: file, mode: 0o666)
        guard case .notRunning(let writable) = TargetResolver.resolvePidfile(file) else {
            Issue.record("trusted a world-writable file")
            return
        }
        #expect(writable.contains("writable by its group or others"), "\(writable)")

        try write(target.pid, to: directory + "/real.pid")
        unlink(file)
        symlink(directory + "/real.pid", file)
        guard case .notRunning(let link) = TargetResolver.resolvePidfile(file) else {
            Issue.record("trusted a symlink")
            return
        }
        #expect(link.contains("symbolic link"), "\(link)")

        // Written an hour before the process it names started: its pid was reused.
        try write(target.pid, to: file)
        var times = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        utimensat(AT_FDCWD, file, &times, 0)
        guard case .notRunning(let stale) = TargetResolver.resolvePidfile(file) else {
            Issue.record("trusted a stale pidfile")
            return
        }
        #expect(stale.contains("stale pidfile"), "\(stale)")

        // A directory anyone may write (no sticky bit): the file could be swapped at will.
        try write(target.pid, to: file)
        chmod(directory, 0o777)
        guard case .notRunning(let open) = TargetResolver.resolvePidfile(file) else {
            Issue.record("trusted a file in an open directory")
            return
        }
        #expect(open.contains("anyone may write"), "\(open)")
    }

    /// End to end: a pidfile an unprivileged user wrote, naming a stalled root process, gets
    /// nothing watched and nothing killed, and says why.
    @Test(.tags(.hostile), .enabled(if: getuid() == 0, "needs root to give files to another user"))
    func attack16_anUntrustedPidfileKillsNothing() throws {
        let target = try FixtureProcess(["loop", "--script", "spin:4", "--gap", "0.2"])
        defer { target.stop() }
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/app.pid"
        try write(target.pid, to: file)
        chown(file, 65534, 65534)
        let result = try runCommand(
            FixtureProcess.stallagentURL,
            ["--pidfile", file, "--report-dir", directory + "/reports", "--kill-after", "1s", "--launch-threshold", "0.5s", "--duration", "2.5s"],
            timeout: 30)
        #expect(result.stderr.contains("not trusted"), "\(result.stderr)")
        #expect(!result.stderr.contains("SIGABRT"), "\(result.stderr)")
        #expect(kill(target.pid, 0) == 0, "the process was killed")
    }
}
