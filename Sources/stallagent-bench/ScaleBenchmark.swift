import Foundation
import StallMonitoring
import StallProc

#if canImport(Glibc)
import Glibc
#endif

/// Issue 23's scale figures: what watching a whole family costs as it grows. The agent
/// (`--pid P --follow-children`, defaults) watches a supervisor with N idle workers
/// (`stall-fixtures spawner N`), and a real PostgreSQL with 150 idle connections; after every
/// process is attached, its CPU is read from /proc over a window and its VmHWM at the end.
/// Then how soon a worker forked during the watch is attached: from just before the fork
/// (the spawner's own clock) to the agent's "watching" line.
struct ScaleBenchmark {
    let fixtures: URL
    let agentBinary: URL
    var log: (String) -> Void = {
        print($0)
        fflush(nil)
    }

    /// A running agent whose stderr goes to a file read as it grows.
    final class Agent {
        let child: ChildProcess
        let stderrPath: String
        private var offset = 0
        private(set) var text = ""

        init(_ binary: URL, _ arguments: [String], directory: String) throws {
            stderrPath = directory + "/agent.err"
            let err = open(stderrPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            let null = open("/dev/null", O_RDWR | O_CLOEXEC)
            defer {
                close(err)
                close(null)
            }
            child = try ChildProcess.spawn(binary.path, arguments, stdin: null, stdout: null, stderr: err)
        }

        /// New complete lines since the last call.
        func newLines() -> [Substring] {
            guard let data = FileManager.default.contents(atPath: stderrPath), data.count > offset else { return [] }
            let fresh = String(decoding: data[offset...], as: UTF8.self)
            guard let lastNewline = fresh.lastIndex(of: "\n") else { return [] }
            let complete = fresh[...lastNewline]
            offset += complete.utf8.count
            text += complete
            return complete.split(separator: "\n")
        }

        /// CPU seconds so far, from /proc/PID/schedstat (nanoseconds on CPU, every thread:
        /// the metrics listener's too), not stat's 10 ms ticks, too coarse for a 0.1 % figure.
        var cpuSeconds: Double {
            guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(child.pid)/task") else { return 0 }
            return tasks.reduce(0) { total, tid in
                let text = (try? ProcFS.readText("/proc/\(child.pid)/task/\(tid)/schedstat", pid: child.pid)) ?? ""
                return total + (Double(text.split(separator: " ").first ?? "") ?? 0) / 1e9
            }
        }

        var peakRSSBytes: UInt64 { UInt64(AgentResourceUsage.peakResidentBytes(pid: String(child.pid)) ?? 0) }

        func stop() {
            kill(child.pid, SIGTERM)
            var status: Int32 = 0
            let deadline = MonotonicTime.seconds() + 10
            while waitpid(child.pid, &status, WNOHANG) == 0 {
                if MonotonicTime.seconds() > deadline {
                    kill(child.pid, SIGKILL)
                    waitpid(child.pid, &status, 0)
                    break
                }
                usleep(10_000)
            }
        }
    }

    static func watchingCount(_ lines: [Substring]) -> Int {
        lines.filter { $0.hasPrefix("stallagent: watching ") }.count
    }

    /// Waits until `count` processes are watched; false on timeout.
    static func waitForWatching(_ agent: Agent, count: Int, timeout: Double) -> Bool {
        let deadline = MonotonicTime.seconds() + timeout
        var seen = 0
        while MonotonicTime.seconds() < deadline {
            seen += watchingCount(agent.newLines())
            if seen >= count { return true }
            usleep(20_000)
        }
        return false
    }

    /// The agent's CPU share over `window` seconds and its VmHWM after it.
    static func measure(_ agent: Agent, window: Double) -> (cpuShare: Double, peakBytes: UInt64) {
        usleep(1_000_000)  // the last attach's first probes and loop learning
        let start = MonotonicTime.seconds()
        let before = agent.cpuSeconds
        usleep(UInt32(window * 1e6))
        let share = (agent.cpuSeconds - before) / (MonotonicTime.seconds() - start)
        return (share, agent.peakRSSBytes)
    }

    func run(quick: Bool) throws {
        let window = quick ? 4.0 : 10.0
        let sizes = quick ? [1, 50, 200] : [1, 10, 50, 200]
        log("Watching a family as a whole (--pid P --follow-children, all idle; agent CPU over \(Int(window)) s after every process is attached, VmHWM)")
        log("  watched                                           agent CPU      VmHWM   vs 1 process")
        var single: (Double, UInt64)?
        for size in sizes {
            guard let result = try familyRun(workers: size, window: window) else { continue }
            if single == nil { single = result }
            let ratio = single.map { $0.0 > 0 ? String(format: "%5.1fx CPU", result.0 / $0.0) : "" } ?? ""
            log(
                "  " + "supervisor + \(size) idle worker\(size == 1 ? "" : "s")".padding(toLength: 46, withPad: " ", startingAt: 0)
                    + String(format: "  %6.2f %%   %6.1f MB   ", result.0 * 100, Double(result.1) / 1e6) + ratio)
        }
        try postgresRun(connections: 150, window: window)
        log("  goals: 200 idle processes ≤ 1 % of a core and ≤ 60 MB; PostgreSQL with 150 idle connections the same")
        try runBusyFamily(quick: quick)
        try attachLatency(forks: quick ? 16 : 40)
    }

    private func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("scale-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A spawner fixture with `workers` idle workers (and one more every `every` seconds).
    private func startSpawner(workers: Int, every: Double?, directory: String) throws -> (ChildProcess, String) {
        let out = directory + "/spawner.out"
        let fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer {
            close(fd)
            close(null)
        }
        let spawner = try ChildProcess.spawn(
            fixtures.path, ["spawner", "\(workers)"] + (every.map { [String($0)] } ?? []), stdin: null, stdout: fd, stderr: null)
        let deadline = MonotonicTime.seconds() + 30
        while MonotonicTime.seconds() < deadline {
            if let text = try? String(contentsOfFile: out, encoding: .utf8), text.contains("ready pid=") { return (spawner, out) }
            usleep(10_000)
        }
        throw StallAgentError.invalidArgument("the spawner fixture never got ready")
    }

    private func stopSpawner(_ spawner: ChildProcess) {
        kill(spawner.pid, SIGTERM)
        var status: Int32 = 0
        waitpid(spawner.pid, &status, 0)
    }

    private func familyRun(workers: Int, window: Double) throws -> (Double, UInt64)? {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (spawner, _) = try startSpawner(workers: workers, every: nil, directory: directory)
        defer { stopSpawner(spawner) }
        let agent = try Agent(
            agentBinary, ["--pid", "\(spawner.pid)", "--follow-children", "--report-dir", directory + "/reports"], directory: directory)
        defer { agent.stop() }
        guard Self.waitForWatching(agent, count: workers + 1, timeout: 60) else {
            log("  \(workers) workers: not all attached within 60 s, skipped")
            return nil
        }
        let result = Self.measure(agent, window: window)
        let stalls = agent.text.components(separatedBy: " detected: ").count - 1
        if stalls > 0 { log("  (\(workers) workers: \(stalls) stall line(s) from an idle family: a false alarm)") }
        return result
    }

    /// Debian's PostgreSQL with `connections` idle client connections (psql processes waiting
    /// on a pipe), watched from its postmaster.
    private func postgresRun(connections: Int, window: Double) throws {
        let label = "PostgreSQL, \(connections) idle connections"
        guard let (server, bin) = try startPostgres(label: label, connections: connections) else { return }
        defer { server.stop() }
        let socket = DumpBenchmark.postgresSocketDirectory
        // Each client holds its connection open while it waits for input that never comes.
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { return }
        defer { close(pipeFDs[1]) }
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { close(null) }
        var clients: [ChildProcess] = []
        defer {
            for client in clients { kill(client.pid, SIGTERM) }
            for client in clients {
                var status: Int32 = 0
                waitpid(client.pid, &status, 0)
            }
        }
        for _ in 0..<connections {
            clients.append(
                try ChildProcess.spawn(
                    bin + "/psql", ["-h", socket, "-p", "16432", "-U", "postgres", "-q", "postgres"], stdin: pipeFDs[0], stdout: null,
                    stderr: null))
        }
        close(pipeFDs[0])
        // Every backend up: the postmaster's children are the clients' backends and its helpers.
        let deadline = MonotonicTime.seconds() + 60
        var children = 0
        while MonotonicTime.seconds() < deadline {
            children = Self.childCount(of: server.pid)
            if children >= connections + 4 { break }
            usleep(50_000)
        }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard let agent = try watchFamily(of: server.pid, processes: children + 1, label: label, directory: directory) else { return }
        defer { agent.stop() }
        let (share, peak) = Self.measure(agent, window: window)
        let stalls = agent.text.components(separatedBy: " detected: ").count - 1
        log(
            "  " + "\(label) (\(children + 1) processes)".padding(toLength: 46, withPad: " ", startingAt: 0)
                + String(format: "  %6.2f %%   %6.1f MB", share * 100, Double(peak) / 1e6)
                + (stalls > 0 ? "   \(stalls) stall line(s): false alarms" : ""))
    }

    func runBusyFamily(quick: Bool) throws {
        try busyPostgresRun(clients: 50, seconds: quick ? 10 : 20)
    }

    /// The processes `pid`'s main thread forked that are still there.
    static func childCount(of pid: Int32) -> Int {
        ((try? ProcFS.readText("/proc/\(pid)/task/\(pid)/children", pid: pid)) ?? "").split(separator: " ").count
    }

    /// An agent watching `pid` and its children (`--follow-children`), once it watches all
    /// `processes`; nil (said, under `label`) when they are not all attached within 60 s.
    private func watchFamily(of pid: Int32, processes: Int, label: String, directory: String) throws -> Agent? {
        let agent = try Agent(
            agentBinary, ["--pid", "\(pid)", "--follow-children", "--report-dir", directory + "/reports"], directory: directory)
        guard Self.waitForWatching(agent, count: processes, timeout: 60) else {
            agent.stop()
            log("  \(label): not all \(processes) processes attached within 60 s, skipped")
            return nil
        }
        return agent
    }

    /// Debian's newest PostgreSQL started for `connections` clients and idle, with its bin
    /// directory; nil (said, under `label`) when it or `needs` is not installed or it never
    /// got idle.
    private func startPostgres(label: String, connections: Int, needs: String = "postgres") throws -> (DumpBenchmark.Target, String)? {
        guard let version = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))?.sorted().last else {
            log("  \(label): PostgreSQL not installed, skipped")
            return nil
        }
        let bin = "/usr/lib/postgresql/\(version)/bin"
        guard FileManager.default.isExecutableFile(atPath: bin + "/" + needs) else {
            log("  \(label): \(needs) not installed, skipped")
            return nil
        }
        guard let server = try DumpBenchmark.postgresTarget(bin + "/postgres", settings: ["max_connections=\(connections + 20)"]) else {
            log("  \(label): initdb failed, skipped")
            return nil
        }
        guard DumpBenchmark.waitUntilIdle(server.pid) else {
            server.stop()
            log("  \(label): the postmaster never got idle, skipped")
            return nil
        }
        return (server, bin)
    }

    /// A healthy busy family: PostgreSQL under `pgbench -S -c clients` (read-only, every
    /// backend connecting during the watch), watched from its postmaster; halfway through, one
    /// more client runs `pg_sleep(2)`, the one stall there is to report.
    private func busyPostgresRun(clients: Int, seconds: Int) throws {
        let label = "PostgreSQL under pgbench -S -c \(clients)"
        log("A busy family (agent CPU over the load, stalls reported; goal ≤ 3 % of a core, one stall: the pg_sleep(2), blocked, ±20 ms)")
        guard let (server, bin) = try startPostgres(label: label, connections: clients, needs: "pgbench") else { return }
        defer { server.stop() }
        let socket = DumpBenchmark.postgresSocketDirectory
        let connection = ["-h", socket, "-p", "16432", "-U", "postgres"]
        guard let initialised = DumpBenchmark.run([bin + "/pgbench", "-i", "-q", "-s", "1"] + connection + ["postgres"]),
            initialised.status == 0
        else {
            log("  \(label): pgbench -i failed, skipped")
            return
        }
        let children = Self.childCount(of: server.pid)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard let agent = try watchFamily(of: server.pid, processes: children + 1, label: label, directory: directory) else { return }
        defer { agent.stop() }
        usleep(1_000_000)
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { close(null) }
        let start = MonotonicTime.seconds()
        let before = agent.cpuSeconds
        let load = try ChildProcess.spawn(
            bin + "/pgbench", ["-S", "-n", "-c", "\(clients)", "-j", "2", "-T", "\(seconds)"] + connection + ["postgres"],
            stdin: null, stdout: null, stderr: null)
        usleep(UInt32(seconds) * 200_000)
        // A session that has waited for its client first (its backend's home wait is known)
        // and stays connected after, as an application's pooled connection does: a backend
        // that sleeps before it ever waited for a query looks parked, not stalled, and one
        // that exits right after is gone before a probe sees it back in its wait (its
        // postmaster reaps it at once), so its stall ends as a death.
        let psql = ([bin + "/psql"] + connection + ["-q", "postgres"]).joined(separator: " ")
        let sleeper = try ChildProcess.spawn(
            "/bin/sh", ["-c", "(echo 'select 1;'; sleep 1.5; echo 'select pg_sleep(2);'; sleep 3) | \(psql)"], stdin: null, stdout: null,
            stderr: null)
        var status: Int32 = 0
        waitpid(sleeper.pid, &status, 0)
        waitpid(load.pid, &status, 0)
        let share = (agent.cpuSeconds - before) / (MonotonicTime.seconds() - start)
        usleep(500_000)
        _ = agent.newLines()
        // "stall #1 0xbaadca11 blocked 2.00 s in pg_sleep (postgres[123], loop) → …"
        let ended = agent.text.split(separator: "\n").filter { $0.hasPrefix("stall #") }
        let described = ended.map { line -> String in
            let words = line.split(separator: " ")
            return words.count > 5 ? "\(words[3]) \(words[4]) s" : String(line)
        }
        log(
            "  " + label.padding(toLength: 46, withPad: " ", startingAt: 0)
                + String(format: "  %6.2f %%   %6.1f MB   ", share * 100, Double(agent.peakRSSBytes) / 1e6)
                + "\(ended.count) stall(s)\(described.isEmpty ? "" : ": " + described.joined(separator: ", "))")
        for line in ended { log("    \(line)") }
    }

    /// From a fork (the spawner's clock, just before it) to the agent's "watching" line for the
    /// new worker, with 50 idle workers already watched and asleep.
    private func attachLatency(forks: Int) throws {
        let every = 0.25
        log("\nNew worker attached after its fork (spawner with 50 idle workers, one more every \(every) s, \(forks) forks)")
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (forking, forkLog) = try startSpawner(workers: 50, every: every, directory: directory)
        defer { stopSpawner(forking) }
        let agent = try Agent(
            agentBinary, ["--pid", "\(forking.pid)", "--follow-children", "--report-dir", directory + "/reports"], directory: directory)
        defer { agent.stop() }
        var attachedAt: [Int32: Double] = [:]
        let deadline = MonotonicTime.seconds() + Double(forks) * every + 30
        var latencies: [Double] = []
        var initial: Set<Int32> = []
        var started = false
        while MonotonicTime.seconds() < deadline {
            let now = MonotonicTime.seconds()
            for line in agent.newLines() where line.hasPrefix("stallagent: watching ") {
                if let open = line.firstIndex(of: "["), let close = line[open...].firstIndex(of: "]"),
                    let pid = Int32(line[line.index(after: open)..<close])
                {
                    attachedAt[pid] = now
                }
            }
            let forked = Self.forks(forkLog)
            if !started {
                // The workers forked before the agent attached are not timed.
                if attachedAt.count >= 52 {
                    started = true
                    initial = Set(forked.map(\.pid))
                }
            } else {
                latencies = forked.filter { !initial.contains($0.pid) }.compactMap { fork in attachedAt[fork.pid].map { $0 - fork.mono } }
                if latencies.count >= forks { break }
            }
            usleep(1_000)
        }
        guard !latencies.isEmpty else {
            log("  no worker forked during the watch was attached")
            return
        }
        let sorted = latencies.sorted()
        func at(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * q))] * 1000 }
        log(
            String(
                format: "  %d forks: attached after p50 %.1f ms, p90 %.1f ms, max %.1f ms (goal ≤ 50 ms)", sorted.count, at(0.5), at(0.9),
                sorted.last! * 1000))
    }

    /// `forked pid=P mono=T` lines of the spawner's output.
    static func forks(_ path: String) -> [(pid: Int32, mono: Double)] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("forked ") else { return nil }
            var pid: Int32?
            var mono: Double?
            for word in line.split(separator: " ") {
                if word.hasPrefix("pid=") { pid = Int32(word.dropFirst(4)) }
                if word.hasPrefix("mono=") { mono = Double(word.dropFirst(5)) }
            }
            guard let pid, let mono else { return nil }
            return (pid, mono)
        }
    }
}
