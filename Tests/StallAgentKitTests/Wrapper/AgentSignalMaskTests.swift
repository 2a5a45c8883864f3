import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The agent reads its signals from a signalfd, so it keeps them blocked in every thread:
/// a thread that did not block one would take it with the default action and kill the agent
/// mid-report, and a child that inherited the mask could not be stopped by SIGTERM or Ctrl-C.
@Suite(.serialized, .tags(.timed)) struct AgentSignalMaskTests {
    let agent = FixtureProcess.stallagentURL
    let fixtures = FixtureProcess.executableURL.path

    func scratch() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mask-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// A field of /proc/PID[/task/TID]/status holding a signal set, as a bit mask.
    static func signalSet(_ field: String, statusPath: String) -> UInt64? {
        guard let text = try? String(contentsOfFile: statusPath, encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") })
        else { return nil }
        return UInt64(line.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces), radix: 16)
    }

    static func bits(_ signals: [Int32]) -> UInt64 {
        signals.reduce(0) { $0 | (1 << UInt64($1 - 1)) }
    }

    /// The SigBlk of every thread of `pid` (ids and masks).
    static func threadMasks(_ pid: pid_t) -> [(tid: String, blocked: UInt64?)] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.map { ($0, signalSet("SigBlk", statusPath: "/proc/\(pid)/task/\($0)/status")) }
    }

    /// The thread masks once `pid` runs at least `count` threads (or after 10 s).
    static func threadMasks(_ pid: pid_t, atLeast count: Int) -> [(tid: String, blocked: UInt64?)] {
        var masks = threadMasks(pid)
        let deadline = Date().addingTimeInterval(10)
        while masks.count < count, Date() < deadline {
            usleep(20_000)
            masks = threadMasks(pid)
        }
        return masks
    }

    func waitFor(_ text: String, in path: String, timeout: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").contains(text) { return true }
            usleep(10_000)
        }
        return false
    }

    /// The command starts as a shell would start it: nothing blocked, SIGPIPE at its default,
    /// although the agent blocks INT, TERM, HUP, QUIT, USR1, USR2 and CHLD and ignores SIGPIPE.
    @Test func wrappedCommandStartsWithSignalsUnblocked() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pid = try CleanProcess.spawn(
            agent.path, ["--report-dir", dir + "/reports", "--", "/bin/sh", "-c", "grep -E '^Sig(Blk|Ign):' /proc/self/status"],
            newSession: true, stdout: dir + "/out")
        #expect(CleanProcess.wait(pid) == .exited(0))
        let out = try String(contentsOfFile: dir + "/out", encoding: .utf8)
        #expect(out.contains("SigBlk:\t0000000000000000"), "\(out)")
        let ignored = Self.signalSet("SigIgn", statusPath: dir + "/out")
        #expect(ignored.map { $0 & Self.bits([SIGPIPE, SIGINT, SIGTERM, SIGCHLD]) } == 0, "\(out)")
    }

    /// Every thread of the wrapper — the symbol reader's included, started when the command
    /// is first looked at — blocks the signals it forwards and SIGCHLD; a SIGTERM is still
    /// forwarded and the command's status passed through.
    @Test func everyWrapperThreadBlocksTheSignalsItReads() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pid = try CleanProcess.spawn(
            agent.path, ["--report-dir", dir + "/reports", "--", fixtures, "idle"],
            newSession: true, stdout: dir + "/out", stderr: dir + "/err")
        #expect(waitFor("ready", in: dir + "/out"))
        let masks = Self.threadMasks(pid, atLeast: 2)
        #expect(masks.count >= 2, "the symbol reader runs a thread")
        let wanted = Self.bits([SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD])
        for (tid, blocked) in masks {
            #expect(blocked.map { $0 & wanted } == wanted, "thread \(tid): SigBlk \(String(blocked ?? 0, radix: 16))")
        }
        kill(pid, SIGTERM)
        // The idle fixture exits 0 on the forwarded SIGTERM; the agent with its status.
        #expect(CleanProcess.wait(pid) == .exited(0))
        #expect(waitFor("eintr=", in: dir + "/out", timeout: 1))
    }

    /// The host agent blocks the stop signals in every thread, the metrics listener's
    /// included, and leaves the others (USR1) at their default; a SIGTERM ends its sleep in
    /// poll at once (before the second its sleep may last) and finalises the watch.
    @Test func watchStopsFromItsPollSleepOnSigterm() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fixture = try FixtureProcess(["idle"])
        let pid = try CleanProcess.spawn(
            agent.path, ["--pid", "\(fixture.pid)", "--report-dir", dir + "/reports", "--metrics-listen", "127.0.0.1:0"],
            stderr: dir + "/err")
        #expect(waitFor("watching", in: dir + "/err"))
        let stop = Self.bits([SIGINT, SIGTERM, SIGHUP])
        // The symbol reader's and the metrics listener's. glibc blocks every signal in a thread
        // for the moment it creates another (and in the new one until it starts): on a loaded
        // machine a read can land in that moment, so the steady masks are read again.
        var masks = Self.threadMasks(pid, atLeast: 3)
        for _ in 0..<20 where masks.contains(where: { $0.blocked.map { $0 & Self.bits([SIGUSR1]) } != 0 }) {
            usleep(50_000)
            masks = Self.threadMasks(pid)
        }
        #expect(masks.count >= 3, "\(masks.count) threads")
        for (tid, blocked) in masks {
            #expect(blocked.map { $0 & stop } == stop, "thread \(tid): SigBlk \(String(blocked ?? 0, radix: 16))")
            #expect(blocked.map { $0 & Self.bits([SIGUSR1]) } == 0, "thread \(tid): SigBlk \(String(blocked ?? 0, radix: 16))")
        }
        // The target sleeps in epoll_wait, so the agent sleeps in poll for up to a second: the
        // stop lands somewhere inside that second (seeded, so a failure replays).
        var generator = SplitMix64(seed: 0x516_7e4d)
        for _ in 0..<3 {
            usleep(UInt32.random(in: 100_000...400_000, using: &generator))
            #expect(fixture.process.isRunning)
        }
        let sent = Date()
        kill(pid, SIGTERM)
        #expect(waitFor("until interrupted", in: dir + "/err", timeout: 10))
        let noticed = Date().timeIntervalSince(sent)
        // Generous for a loaded machine, yet under the poll's one-second timeout.
        #expect(noticed < 0.8, "the stop was noticed after \(noticed) s")
        #expect(CleanProcess.wait(pid) == .exited(0))
        #expect(fixture.process.isRunning)
    }
}
