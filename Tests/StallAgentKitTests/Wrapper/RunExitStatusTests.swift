import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The wrapper's exit status is the command's, for every value: a CI job must not mistake a
/// failing test run (exit 1, 64, …) for a broken wrapper (125).
@Suite(.serialized) struct RunExitStatusTests {
    let agent = FixtureProcess.stallagentURL

    /// `stallagent -- sh -c 'exit N'` for all 256 values, one agent each, four chains at a time
    /// (N ≡ k mod 4) to keep it short. With --quiet each run must also leave stderr empty.
    @Test func everyExitStatusPassesThrough() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("exit-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let script = """
            chain() {
              n=$1; bad=
              while [ $n -le 255 ]; do
                '\(agent.path)' --quiet --report-dir '\(dir)/reports' -- /bin/sh -c "exit $n" 2>'\(dir)'/err.$1
                status=$?
                [ $status -eq $n ] || bad="$bad $n->$status"
                [ -s '\(dir)'/err.$1 ] && bad="$bad $n:stderr:$(head -c 200 '\(dir)'/err.$1)"
                n=$((n + 4))
              done
              echo "chain $1 bad=[$bad]" > '\(dir)'/chain.$1
            }
            chain 0 & chain 1 & chain 2 & chain 3 &
            wait
            cat '\(dir)'/chain.*
            """
        let result = try CleanProcess.runShell(script, timeout: 300)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 4, "\(result.stdout) \(result.stderr)")
        for line in lines { #expect(line.hasSuffix("bad=[]"), "\(line)") }
    }

    /// 128 + N when signal N killed the command and the agent did not get that signal itself:
    /// the agent exits with that status rather than dying of the signal.
    @Test func signalDeathsBecome128PlusN() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sig-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for sig in [SIGINT, SIGTERM, SIGHUP, SIGKILL, SIGSEGV] {
            let result = try runCommand(agent, ["--report-dir", dir, "--", "/bin/sh", "-c", "kill -\(sig) $$"])
            #expect(result.status == 128 + sig, "signal \(sig): \(result.stderr)")
        }
    }

    /// Failures of the agent itself keep 125; "not found" and "not executable" keep 127 and
    /// 126, like timeout(1).
    @Test func theAgentsOwnErrorsAreDistinct() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("own-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let notFound = try runCommand(agent, ["--report-dir", dir, "--", "no-such-command-\(getpid())"])
        #expect(notFound.status == 127)
        #expect(notFound.stderr.contains("command not found"))
        let notExecutable = try runCommand(agent, ["--report-dir", dir, "--", "/etc/passwd"])
        #expect(notExecutable.status == 126)
        #expect(notExecutable.stderr.contains("cannot execute"))
        let badOption = try runCommand(agent, ["--report-dir", dir, "--threshold", "soon", "--", "/bin/true"])
        #expect(badOption.status == 125)
        #expect(badOption.stderr.contains("--threshold"))
    }
}
