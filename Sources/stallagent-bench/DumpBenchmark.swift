import Foundation
import StallProc
import StallMonitoring

#if canImport(Glibc)
import Glibc
#endif

/// Issue 14's dump and memory figures against real Debian programs: `stallagent dump` against
/// `eu-stack -1 -i -s` (first thread, inlines, source lines: what the dump shows) on the same
/// idle process, alternating, medians; and the agent's peak RSS watching a Node.js and a
/// Python asyncio process that stall.
struct DumpBenchmark {
    let agentBinary: URL
    var log: (String) -> Void = {
        print($0)
        fflush(nil)
    }

    /// A program run for the measurement, stopped (and its files removed) by `stop`.
    struct Target {
        var name: String
        var process: Process
        var cleanup: () -> Void = {}
        var pid: Int32 { process.processIdentifier }

        func stop() {
            if process.isRunning {
                kill(pid, SIGTERM)
                let deadline = Date().addingTimeInterval(5)
                while process.isRunning && Date() < deadline { usleep(20_000) }
                if process.isRunning { kill(pid, SIGKILL) }
                process.waitUntilExit()
            }
            cleanup()
        }
    }

    /// One child run to its end: wall time and its own peak RSS (VmHWM, polled every 2 ms
    /// until it exits: the high-water mark only grows, so the last read is the peak within
    /// 2 ms). Not wait4's `ru_maxrss`: exec carries the old address space's high-water mark
    /// into it, and posix_spawn execs from the bench's own (vfork), so every child read as
    /// large as the bench had grown.
    struct Run {
        var wallNanos: UInt64
        var maxRSSBytes: UInt64
        var status: Int32
    }

    static func run(_ arguments: [String], stdout: String = "/dev/null") -> Run? {
        var peak: UInt64 = 0
        guard
            let (wall, status) = try? TimedChild.run(
                arguments, stdout: stdout, pollMicros: 2000,
                everyPoll: { pid in
                    if let bytes = AgentResourceUsage.peakResidentBytes(pid: "\(pid)") { peak = max(peak, UInt64(bytes)) }
                })
        else { return nil }
        return Run(wallNanos: wall, maxRSSBytes: peak, status: status)
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    /// Waits until the main thread sleeps in an idle wait (epoll, poll, select): a dump of a
    /// process still starting up would measure its start-up.
    static func waitUntilIdle(_ pid: Int32, timeout: Double = 20) -> Bool {
        let idle: Set<Int> = [7, 23, 232, 270, 271, 281, 441]
        let deadline = Date().addingTimeInterval(timeout)
        var seen = 0
        while Date() < deadline {
            if let text = try? String(contentsOfFile: "/proc/\(pid)/syscall", encoding: .utf8),
                let number = Int(text.split(separator: " ").first ?? ""), idle.contains(number)
            {
                seen += 1
                if seen >= 3 { return true }
            } else {
                seen = 0
            }
            usleep(100_000)
        }
        return false
    }

    /// Each target runs in a directory of its own, removed with it, and its perf map goes too:
    /// Node writes `isolate-*-v8.log` into its working directory and `/tmp/perf-PID.map`
    /// (32 MB once grown) that outlives it, and Redis may save `dump.rdb`. Run from the
    /// checkout, every bench run left them there and in /tmp.
    static func launch(_ name: String, _ executable: String, _ arguments: [String], cleanup: @escaping () -> Void = {}) throws -> Target {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dbench-target-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        let pid = process.processIdentifier
        return Target(
            name: name, process: process,
            cleanup: {
                cleanup()
                try? FileManager.default.removeItem(at: directory)
                try? FileManager.default.removeItem(atPath: "/tmp/perf-\(pid).map")
            })
    }

    /// Debian's programs, each idle in its event loop. Missing ones are skipped with a note.
    func idleTargets() -> [() throws -> Target?] {
        let python = "/usr/bin/python3"
        let node = ["/usr/bin/node", "/usr/bin/nodejs"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let postgres = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))?.sorted().last
            .map { "/usr/lib/postgresql/\($0)/bin/postgres" }
        return [
            {
                guard FileManager.default.isExecutableFile(atPath: python) else { return nil }
                return try Self.launch(
                    "Python (asyncio)", python,
                    ["-c", "import asyncio\nasync def main():\n    while True: await asyncio.sleep(3600)\nasyncio.run(main())"])
            },
            {
                guard FileManager.default.isExecutableFile(atPath: "/usr/bin/redis-server") else { return nil }
                return try Self.launch("Redis", "/usr/bin/redis-server", ["--port", "16479", "--save", "", "--appendonly", "no"])
            },
            {
                guard let postgres, FileManager.default.isExecutableFile(atPath: postgres) else { return nil }
                return try Self.postgresTarget(postgres)
            },
            {
                guard let node else { return nil }
                return try Self.launch("Node.js", node, ["-e", "setInterval(() => {}, 1000)"])
            },
        ]
    }

    /// A private cluster (initdb in a temporary directory, run as the postgres user when root):
    /// the postmaster, idle in its wait.
    static func postgresTarget(_ postgres: String, settings: [String] = []) throws -> Target? {
        let bin = (postgres as NSString).deletingLastPathComponent
        let data = postgresSocketDirectory
        try? FileManager.default.removeItem(atPath: data)
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        var prefix: [String] = []
        if geteuid() == 0 {
            guard let user = getpwnam("postgres") else { return nil }
            chown(data, user.pointee.pw_uid, user.pointee.pw_gid)
            prefix = ["/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"]
        }
        let cleanup: () -> Void = { _ = try? FileManager.default.removeItem(atPath: data) }
        guard let initdb = run(prefix + ["\(bin)/initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]),
            initdb.status == 0
        else {
            cleanup()
            return nil
        }
        let arguments = ["-D", data, "-p", "16432", "-k", data, "-c", "listen_addresses="] + settings.flatMap { ["-c", $0] }
        if prefix.isEmpty { return try launch("PostgreSQL (postmaster)", postgres, arguments, cleanup: cleanup) }
        return try launch("PostgreSQL (postmaster)", prefix[0], Array(prefix.dropFirst()) + [postgres] + arguments, cleanup: cleanup)
    }

    /// The data directory of the cluster `postgresTarget` starts, which is its socket directory too.
    static var postgresSocketDirectory: String {
        FileManager.default.temporaryDirectory.appendingPathComponent("dbench-pg-\(getpid())").path
    }

    func run(quick: Bool) throws {
        let rounds = quick ? 5 : 9
        let euStack = "/usr/bin/eu-stack"
        log("One-shot dump vs eu-stack -1 -i -s on the same idle process (\(rounds) alternating rounds, medians)")
        guard FileManager.default.isExecutableFile(atPath: euStack) else {
            log("  eu-stack not installed (elfutils): skipped")
            return
        }
        log("  target                         stallagent dump     eu-stack      ratio   dump RSS   eu-stack RSS")
        for make in idleTargets() {
            guard let target = try make() else { continue }
            defer { target.stop() }
            // The postmaster runs under setpriv, which execs it: same pid.
            guard Self.waitUntilIdle(target.pid) else {
                log("  \(target.name): never idle, skipped")
                continue
            }
            var ours: [Double] = []
            var theirs: [Double] = []
            var ourRSS: [Double] = []
            var theirRSS: [Double] = []
            for round in 0..<rounds {
                let dump = { Self.run([agentBinary.path, "dump", "--pid", "\(target.pid)"]) }
                let eu = { Self.run([euStack, "-1", "-i", "-s", "-p", "\(target.pid)"]) }
                // Alternate which goes first, so drift in the machine's load hits both alike.
                var a: Run?
                var b: Run?
                if round % 2 == 0 {
                    a = dump()
                    b = eu()
                } else {
                    b = eu()
                    a = dump()
                }
                guard let a, let b, a.status == 0 else {
                    log("  \(target.name): dump failed (status \(a?.status ?? -1))")
                    break
                }
                ours.append(Double(a.wallNanos) / 1e6)
                theirs.append(Double(b.wallNanos) / 1e6)
                ourRSS.append(Double(a.maxRSSBytes) / 1e6)
                theirRSS.append(Double(b.maxRSSBytes) / 1e6)
            }
            guard !ours.isEmpty else { continue }
            let (o, t) = (Self.median(ours), Self.median(theirs))
            log(
                "  " + target.name.padding(toLength: 30, withPad: " ", startingAt: 0)
                    + String(
                        format: " %8.1f ms        %8.1f ms   %5.2fx   %5.1f MB   %5.1f MB", o, t, t > 0 ? o / t : 0,
                        Self.median(ourRSS), Self.median(theirRSS)))
        }
        log("  goal: dump wall ≤ 1.0x eu-stack on each")
        try watchMemory(seconds: quick ? 6 : 10)
    }

    /// The agent's peak RSS over a watch of a process that stalls every 3 s (1.5 s of CPU).
    func watchMemory(seconds: Int) throws {
        log("\nAgent peak RSS watching a stalling process (\(seconds) s, defaults, VmHWM)")
        // (name, executable, arguments, perf-map lines to add: a server that has run for days)
        var targets: [(String, String, [String], Int)] = []
        if let node = ["/usr/bin/node", "/usr/bin/nodejs"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
            let arguments = [
                "--perf-basic-prof", "-e",
                "function burnCpu(ms){const t=Date.now();let s=0;while(Date.now()-t<ms){for(let i=0;i<1e4;i++)s+=Math.sqrt(i);}return s;}"
                    + "require('http').createServer((q,r)=>r.end('ok')).listen(0);setInterval(()=>burnCpu(1500),3000);",
            ]
            targets.append(("Node.js --perf-basic-prof", node, arguments, 0))
            targets.append(("  same, 300k-line perf map", node, arguments, 300_000))
        }
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") {
            targets.append(
                (
                    "Python asyncio", "/usr/bin/python3",
                    [
                        "-c",
                        "import asyncio, time\ndef burn():\n    t = time.time()\n    while time.time() - t < 1.5: sum(i * i for i in range(10000))\n"
                            + "async def main():\n    while True:\n        await asyncio.sleep(1.5)\n        burn()\nasyncio.run(main())",
                    ],
                    0
                ))
        }
        for (name, executable, arguments, extraLines) in targets {
            let target = try Self.launch(name, executable, arguments)
            defer { target.stop() }
            guard Self.waitUntilIdle(target.pid) else {
                log("  \(name): never idle, skipped")
                continue
            }
            if extraLines > 0 { Self.growPerfMap(pid: target.pid, lines: extraLines) }
            let reports = FileManager.default.temporaryDirectory.appendingPathComponent("dbench-reports-\(target.pid)").path
            defer { try? FileManager.default.removeItem(atPath: reports) }
            guard let run = Self.run([agentBinary.path, "--pid", "\(target.pid)", "--duration", "\(seconds)s", "--report-dir", reports])
            else { continue }
            let written = (FileManager.default.enumerator(atPath: reports)?.allObjects as? [String] ?? [])
                .filter { $0.hasSuffix(".json") }.count
            log(
                "  " + name.padding(toLength: 30, withPad: " ", startingAt: 0)
                    + String(format: " %6.1f MB   (%d reports, exit %d)", Double(run.maxRSSBytes) / 1e6, written, run.status >> 8))
        }
        log("  goal: ≤ 50 MB")
    }

    /// Appends JIT-like lines at addresses no code uses (about 32 MB for 300 000 lines), as a
    /// long-running server's map grows; the process itself never reads the file.
    static func growPerfMap(pid: Int32, lines: Int) {
        guard let handle = FileHandle(forWritingAtPath: "/tmp/perf-\(pid).map") else { return }
        defer { try? handle.close() }
        _ = try? handle.seekToEnd()
        var chunk = ""
        for index in 0..<lines {
            chunk +=
                String(0x1_0000_0000 + index * 0x100, radix: 16) + " 80 LazyCompile:*someFunctionName\(index) "
                + "/srv/app/node_modules/some-package/lib/module\(index % 500).js:\(index % 3000):\(index % 80)\n"
            if chunk.utf8.count > 1 << 20 {
                try? handle.write(contentsOf: Data(chunk.utf8))
                chunk = ""
            }
        }
        try? handle.write(contentsOf: Data(chunk.utf8))
    }
}
