import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Signals in a wrapped run, as shells and CI runners send them: a signal to the whole
/// process group reaches the command once, and an agent interrupted together with its
/// command dies of the same signal, so a shell loop stops.
@Suite(.serialized, .tags(.timed)) struct RunSignalTests {
    let agent = FixtureProcess.stallagentURL

    func scratch() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sig-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// The agent as a CI runner starts a job: leader of a new session without a controlling
    /// terminal, so its process group is its own to signal.
    func spawnSessionLeader(_ arguments: [String]) throws -> pid_t {
        try CleanProcess.spawn(agent.path, arguments, newSession: true)
    }

    func waitForExit(_ pid: pid_t) -> CleanProcess.Ending? { CleanProcess.wait(pid) }

    func waitForFile(_ path: String, timeout: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if FileManager.default.fileExists(atPath: path) { return true }
            usleep(20_000)
        }
        return false
    }

    /// SIGINT to the agent's whole process group: the command's trap runs once. It exits
    /// 40 + the number of SIGINTs it counted, after a second that would let a duplicate land.
    @Test func groupSignalReachesTheCommandOnce() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let script = """
            n=0
            trap 'n=$((n + 1))' INT
            echo > '\(dir)/ready'
            while [ ! -e '\(dir)/stop' ]; do sleep 0.05; done
            exit $((40 + n))
            """
        let pid = try spawnSessionLeader(["--report-dir", dir + "/reports", "--", "/bin/sh", "-c", script])
        #expect(waitForFile(dir + "/ready"))
        kill(-pid, SIGINT)
        sleep(1)
        _ = FileManager.default.createFile(atPath: dir + "/stop", contents: nil)
        // The command handled the signal and exited normally: the agent exits with its status.
        #expect(waitForExit(pid) == .exited(41))
    }

    /// The command died of the SIGINT (or SIGTERM) the agent also received: the agent dies of
    /// it too, so the shell that started it sees WIFSIGNALED and stops its loop.
    @Test func interruptedAgentDiesOfTheSameSignal() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let group = try spawnSessionLeader(["--report-dir", dir + "/reports", "--", "/bin/sh", "-c", "echo > '\(dir)/ready1'; sleep 60"])
        #expect(waitForFile(dir + "/ready1"))
        kill(-group, SIGINT)
        #expect(waitForExit(group) == .signaled(SIGINT))

        // A signal to the agent alone is passed on, and the agent dies of it with the command.
        let single = try spawnSessionLeader(["--report-dir", dir + "/reports", "--", "/bin/sh", "-c", "echo > '\(dir)/ready2'; sleep 60"])
        #expect(waitForFile(dir + "/ready2"))
        kill(single, SIGTERM)
        #expect(waitForExit(single) == .signaled(SIGTERM))

        // The command caught it and exited: its status, not the signal.
        let caught = try spawnSessionLeader([
            "--report-dir", dir + "/reports", "--", "/bin/sh", "-c", "trap 'exit 3' INT; echo > '\(dir)/ready3'; while :; do sleep 0.05; done",
        ])
        #expect(waitForFile(dir + "/ready3"))
        kill(caught, SIGINT)
        #expect(waitForExit(caught) == .exited(3))
    }

    /// Ctrl-C in a terminal stops a shell loop over wrapped commands. script(1) gives the loop
    /// a pseudo-terminal; ^C written to it makes the line discipline send SIGINT to the
    /// foreground group (agent and command alike). bash, not sh: a non-interactive bash waits
    /// for its child and goes on with the loop unless the child died of SIGINT.
    @Test func ctrlCStopsAShellLoop() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = """
            for t in a b; do
              '\(agent.path)' --report-dir '\(dir)/reports' -- /bin/sh -c "echo > '\(dir)'/ready_$t; sleep 30"
            done
            echo > '\(dir)/loop-done'
            """
        try loop.write(toFile: dir + "/loop.sh", atomically: true, encoding: .utf8)
        let driver = """
            (i=0; while [ ! -e '\(dir)/ready_a' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
             sleep 0.3; printf '\\003'; sleep 2) | script -qec "bash '\(dir)/loop.sh'" /dev/null
            echo "script=$?"
            """
        let result = try CleanProcess.runShell(driver, timeout: 120)
        #expect(FileManager.default.fileExists(atPath: dir + "/ready_a"), "\(result.stdout) \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/ready_b"), "the loop went on after Ctrl-C")
        #expect(!FileManager.default.fileExists(atPath: dir + "/loop-done"), "the loop went on after Ctrl-C")
        #expect(result.stdout.contains("script=130"), "\(result.stdout) \(result.stderr)")
    }
}
