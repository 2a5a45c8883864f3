import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `stallagent top` in a real terminal: tmux runs it in an 80×24 window, capture-pane reads
/// the screen, send-keys types.
@Suite(.serialized) struct TopCommandTests {
    static let tmux = ["/usr/bin/tmux", "/bin/tmux"].first { FileManager.default.isExecutableFile(atPath: $0) }

    struct Session {
        let name = "stallagent-top-\(UUID().uuidString.prefix(8))"

        /// Through CleanProcess, not Foundation's Process: the tmux server a new-session
        /// forks keeps what Process watches for the client's exit, so Process would wait for
        /// the server; and the server (with top in it) needs the signals test threads block.
        func tmux(_ arguments: [String]) throws -> CommandResult {
            let line = ([TopCommandTests.tmux!] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
            return try CleanProcess.runShell(line.joined(separator: " "), timeout: 20)
        }

        func start(_ command: String) throws {
            // The status is printed when top ends; the pane stays for the capture.
            let result = try tmux(["new-session", "-d", "-s", name, "-x", "80", "-y", "24", command + "; echo EXIT=$?; sleep 60"])
            try #require(result.status == 0, "\(result.stderr)")
        }

        func screen() throws -> [String] {
            try tmux(["capture-pane", "-p", "-t", name]).stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        }

        func keys(_ keys: String) throws { _ = try tmux(["send-keys", "-t", name, keys]) }

        func kill() { _ = try? tmux(["kill-session", "-t", name]) }

        /// Captures until `done` says so or `timeout` passes; every screen seen.
        func watch(timeout: Double, until done: ([String]) -> Bool) throws -> [[String]] {
            var screens: [[String]] = []
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                let screen = try screen()
                screens.append(screen)
                if done(screen) { break }
                usleep(250_000)
            }
            return screens
        }
    }

    /// The row of `pid` on a screen, split into its columns.
    static func row(_ pid: Int32, in screen: [String]) -> [String]? {
        screen.first { $0.split(separator: " ").first == "\(pid)"[...] }?.split(separator: " ").map(String.init)
    }

    func topCommand(_ pids: [Int32], reports: String) -> String {
        ([FixtureProcess.stallagentURL.path, "top", "--threshold", "0.5s", "--report-dir", reports] + pids.flatMap { ["--pid", "\($0)"] })
            .map { "'\($0)'" }.joined(separator: " ")
    }

    @Test(.enabled(if: tmux != nil, "tmux is not installed (scripts/setup installs it)"))
    func oneLinePerProcessTurnsMovingAStallAndQuitOnQ() throws {
        let reports = FileManager.default.temporaryDirectory.appendingPathComponent("top-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: reports) }
        // A saturated loop (~300 turns/s), then a 2 s CPU stall, then idle; and an idle one.
        let busy = try FixtureProcess(["loop", "--script", "saturate:3,spin:2,idle:20", "--gap", "1"])
        defer { busy.stop() }
        let idle = try FixtureProcess(["idle"])
        defer { idle.stop() }
        let session = Session()
        defer { session.kill() }
        try session.start(topCommand([busy.pid, idle.pid], reports: reports))
        var sawTurns = 0.0
        var sawStall = false
        let screens = try session.watch(timeout: 25) { screen in
            if let row = Self.row(busy.pid, in: screen), row.count >= 5 {
                sawTurns = max(sawTurns, Double(row[3]) ?? 0)
                // Beside CPU hogs the same stall shows as starved while it waits for a CPU.
                if row[2] == "hang" || row[2] == "starved" { sawStall = true }
                if let stalls = Int(row.last!), stalls >= 1, sawStall { return true }
            }
            return false
        }
        let last = try #require(screens.last)
        #expect(Self.row(busy.pid, in: last)?[1] == "stall-fixtures", "\(last.joined(separator: "\n"))")
        #expect(Self.row(idle.pid, in: last)?[1] == "stall-fixtures")
        #expect(sawTurns > 100, "the saturated loop's turns/s: \(sawTurns)")
        #expect(sawStall, "no screen showed the hang in progress")
        #expect(Int(Self.row(busy.pid, in: last)?.last ?? "") ?? 0 >= 1)
        #expect(screens.allSatisfy { $0.allSatisfy { $0.count <= 80 } })
        #expect(last[1].hasPrefix("    PID NAME"))

        try session.keys("q")
        let after = try session.watch(timeout: 10) { $0.contains("EXIT=0") }
        #expect(after.last?.contains("EXIT=0") == true, "\(after.last?.joined(separator: "\n") ?? "")")
        // Its last table stays on the terminal, and both processes are let go, still running.
        #expect(after.last?.contains { $0.hasPrefix("stallagent top · 2 processes") } == true)
        #expect(busy.procStatus?.tracer == 0 && idle.procStatus?.tracer == 0)
        #expect(kill(busy.pid, 0) == 0 && kill(idle.pid, 0) == 0)
    }

    /// `--follow-children`: a family watched by the service's engine, a line per process,
    /// the worker forked during the watch added, its stall shown, q quits.
    @Test(.enabled(if: tmux != nil, "tmux is not installed (scripts/setup installs it)"))
    func aFamilyGetsALinePerProcessAndNewOnesAppear() throws {
        let reports = FileManager.default.temporaryDirectory.appendingPathComponent("top-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: reports) }
        // A shell that starts an idle worker at once, and 2 s later one that stalls 2.5 s on the CPU.
        let fixtures = FixtureProcess.executableURL.path
        let family = Process()
        family.executableURL = URL(fileURLWithPath: "/bin/sh")
        family.arguments = ["-c", "'\(fixtures)' idle & sleep 2; '\(fixtures)' loop --script idle:1.5,spin:2.5,idle:30 --gap 0.3 & wait"]
        family.standardOutput = FileHandle.nullDevice
        try family.run()
        let shell = family.processIdentifier
        defer {
            let children = (try? String(contentsOfFile: "/proc/\(shell)/task/\(shell)/children", encoding: .utf8)) ?? ""
            for child in children.split(separator: " ").compactMap({ Int32($0) }) { Glibc.kill(child, SIGKILL) }
            Glibc.kill(shell, SIGKILL)
            family.waitUntilExit()
        }
        let session = Session()
        defer { session.kill() }
        let command = [FixtureProcess.stallagentURL.path, "top", "--threshold", "0.5s", "--report-dir", reports, "--pid", "\(shell)", "--follow-children"]
            .map { "'\($0)'" }.joined(separator: " ")
        try session.start(command)
        var most = 0
        var sawStall = false
        let screens = try session.watch(timeout: 30) { screen in
            let rows = screen.filter { $0.split(separator: " ").first.flatMap { Int32($0) } != nil }
            most = max(most, rows.count)
            if rows.contains(where: { $0.contains(" hang ") || $0.contains(" starved ") }) { sawStall = true }
            return sawStall && most >= 3
        }
        let last = try #require(screens.last)
        #expect(most >= 3, "the shell and both workers: \(last.joined(separator: "\n"))")
        #expect(sawStall, "no screen showed the worker's stall: \(last.joined(separator: "\n"))")
        #expect(Self.row(shell, in: last) != nil)
        #expect(screens.allSatisfy { $0.allSatisfy { $0.count <= 80 } })
        try session.keys("q")
        let after = try session.watch(timeout: 10) { $0.contains("EXIT=0") }
        #expect(after.last?.contains("EXIT=0") == true, "\(after.last?.joined(separator: "\n") ?? "")")
    }

    @Test(.enabled(if: tmux != nil, "tmux is not installed (scripts/setup installs it)"))
    func controlCEndsItCleanly() throws {
        let reports = FileManager.default.temporaryDirectory.appendingPathComponent("top-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: reports) }
        let idle = try FixtureProcess(["idle"])
        defer { idle.stop() }
        let session = Session()
        defer { session.kill() }
        try session.start(topCommand([idle.pid], reports: reports))
        let running = try session.watch(timeout: 10) { Self.row(idle.pid, in: $0) != nil }
        #expect(running.last.flatMap { Self.row(idle.pid, in: $0) } != nil)
        try session.keys("C-c")
        let after = try session.watch(timeout: 10) { $0.contains("EXIT=0") }
        #expect(after.last?.contains("EXIT=0") == true, "\(after.last?.joined(separator: "\n") ?? "")")
        #expect(idle.procStatus?.tracer == 0)
    }

    @Test func withoutAPidItSaysSo() throws {
        let result = try runCommand(FixtureProcess.stallagentURL, ["top"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("at least one --pid"))
    }
}
