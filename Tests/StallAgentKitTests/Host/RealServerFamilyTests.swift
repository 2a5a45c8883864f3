import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 24: real servers watched as a family (`--pid MASTER --follow-children`) under load —
/// gunicorn with uvicorn workers, uvicorn `--workers 2`, haproxy `-W` reloaded twice. Their
/// supervisors, helpers and re-executed masters report nothing; a worker's 1.5 s blocking
/// handler is reported once, blocked, named by its Python function. The servers come from
/// `scripts/setup` (gunicorn and uvicorn into `.build/pyvenv`, haproxy and ab from Debian).
extension HostAgentIntegrationTests {
    static let pyvenv = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/pyvenv/bin").path

    static var hasPythonServers: Bool {
        FileManager.default.isExecutableFile(atPath: pyvenv + "/gunicorn")
            && FileManager.default.isExecutableFile(atPath: pyvenv + "/uvicorn")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/ab") && geteuid() == 0
    }

    static var hasHaproxy: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/sbin/haproxy")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/ab") && geteuid() == 0
    }

    /// An ASGI app whose /block sleeps 1.5 s in the worker's event loop.
    static let asgiApp = """
        import time

        def blocking_handler():
            time.sleep(1.5)

        async def app(scope, receive, send):
            if scope["type"] == "lifespan":
                while True:
                    message = await receive()
                    if message["type"] == "lifespan.startup":
                        await send({"type": "lifespan.startup.complete"})
                    elif message["type"] == "lifespan.shutdown":
                        await send({"type": "lifespan.shutdown.complete"})
                        return
            if scope["type"] != "http":
                return
            if scope["path"] == "/block":
                blocking_handler()
            body = b"ok\\n"
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/plain"), (b"content-length", b"3")]})
            await send({"type": "http.response.body", "body": body})

        """

    static func freePort() -> Int { 20_000 + Int.random(in: 0..<20_000) }

    /// Ends a server and every process under it: a gunicorn master that is gone leaves its
    /// workers running, holding the test's output pipe.
    static func killFamily(_ server: FixtureProcess) {
        var family: [Int32] = [server.pid]
        var index = 0
        while index < family.count {
            let pid = family[index]
            index += 1
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            for tid in tasks {
                let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/children", encoding: .utf8)) ?? ""
                family += children.split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            }
        }
        for pid in family { kill(pid, SIGKILL) }
        _ = server.waitForExit(timeout: 10)
    }

    /// True once something answers on 127.0.0.1:`port`.
    func waitForPort(_ port: Int, timeout: Double = 20) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let result = try? runCommand(
                URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "-m", "3", "-o", "/dev/null", "http://127.0.0.1:\(port)/"], timeout: 10),
                result.status == 0
            {
                return true
            }
            usleep(100_000)
        }
        return false
    }

    /// Watches the server family 15 s under `ab -c 20`, with one /block request in the middle
    /// when `block`; returns the agent's stderr and the reports.
    func watchServer(pid: Int32, port: Int, directory: String, block: Bool, during: () -> Void = {}) throws -> (String, [String]) {
        let reports = directory + "/reports"
        let (agent, stderrPath) = try startAgent(["--pid", "\(pid)", "--follow-children", "--report-dir", reports, "--duration", "15s"])
        usleep(2_000_000)
        let load = try runCommand(URL(fileURLWithPath: "/usr/bin/ab"), ["-q", "-n", "3000", "-c", "20", "http://127.0.0.1:\(port)/"], timeout: 60)
        #expect(load.status == 0, "\(load.stderr)")
        during()
        if block {
            let blocked = try runCommand(URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "-m", "20", "http://127.0.0.1:\(port)/block"], timeout: 30)
            #expect(blocked.status == 0)
        }
        #expect(finish(agent, timeout: 40) == 0)
        let stderr = try String(contentsOfFile: stderrPath, encoding: .utf8)
        return (stderr, reportStems(reports))
    }

    /// The stall lines of `stderr` (`stall #N CODE REASON DURATION in FUNCTION (NAME[PID], …`).
    func stallLines(_ stderr: String) -> [Substring] {
        stderr.split(separator: "\n").filter { $0.hasPrefix("stall #") }
    }

    func checkOneBlockedHandler(_ stderr: String, reports: [String], supervisors: [Int32]) {
        let lines = stallLines(stderr)
        #expect(lines.count == 1, "\(stderr)")
        #expect(reports.count == 1, "\(reports)")
        guard let line = lines.first else { return }
        #expect(line.contains(" blocked ") && line.contains(" in blocking_handler "), "\(line)")
        let words = line.split(separator: " ")
        if let index = words.firstIndex(of: "blocked"), index + 1 < words.count, let seconds = Double(words[index + 1]) {
            #expect(abs(seconds - 1.5) <= 0.15, "\(line)")
        }
        for pid in supervisors { #expect(!line.contains("[\(pid)]"), "\(line)") }
    }

    @Test(.enabled(if: hasPythonServers, "needs root, ab, and gunicorn + uvicorn in .build/pyvenv (scripts/setup installs them)"))
    func gunicornArbiterIsASupervisorAndAWorkerStallIsReportedOnce() throws {
        let dir = try temporaryDirectory("gunicorn")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.asgiApp.write(toFile: dir + "/app.py", atomically: true, encoding: .utf8)
        let port = Self.freePort()
        let server = try FixtureProcess(
            ["-w", "2", "-k", "uvicorn.workers.UvicornWorker", "-b", "127.0.0.1:\(port)", "--chdir", dir, "app:app"],
            executable: URL(fileURLWithPath: Self.pyvenv + "/gunicorn"), waitForReady: false)
        defer { Self.killFamily(server) }
        try #require(waitForPort(port), "gunicorn never answered: \(server.output)")
        let (stderr, reports) = try watchServer(pid: server.pid, port: port, directory: dir, block: true)
        checkOneBlockedHandler(stderr, reports: reports, supervisors: [server.pid])
        let row = stderr.split(separator: "\n").first { $0.hasPrefix("  \(server.pid) ") } ?? ""
        #expect(row.contains(" supervisor "), "\(stderr)")
    }

    @Test(.enabled(if: hasPythonServers, "needs root, ab, and uvicorn in .build/pyvenv (scripts/setup installs it)"))
    func uvicornResourceTrackerIsAHelperAndAWorkerStallIsReportedOnce() throws {
        let dir = try temporaryDirectory("uvicorn")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.asgiApp.write(toFile: dir + "/app.py", atomically: true, encoding: .utf8)
        let port = Self.freePort()
        let server = try FixtureProcess(
            ["--app-dir", dir, "--workers", "2", "--port", "\(port)", "--log-level", "warning", "app:app"],
            executable: URL(fileURLWithPath: Self.pyvenv + "/uvicorn"), waitForReady: false)
        defer { Self.killFamily(server) }
        try #require(waitForPort(port), "uvicorn never answered: \(server.output)")
        let (stderr, reports) = try watchServer(pid: server.pid, port: port, directory: dir, block: true)
        checkOneBlockedHandler(stderr, reports: reports, supervisors: [server.pid])
        // The master idles in Event.wait(0.5) and pings its workers through poll(): a
        // supervisor, however often a loaded worker makes that poll block.
        let row = stderr.split(separator: "\n").first { $0.hasPrefix("  \(server.pid) ") } ?? ""
        #expect(row.contains(" supervisor "), "\(stderr)")
        // multiprocessing's resource tracker, in read() on its pipe for life: a helper.
        let tracker = stderr.split(separator: "\n").first { $0.contains(" helper ") }
        #expect(tracker != nil, "\(stderr)")
    }

    @Test(.enabled(if: hasHaproxy, "needs root, haproxy and ab (scripts/setup installs them)"))
    func haproxyMasterReExecutedOnReloadReportsNothing() throws {
        let dir = try temporaryDirectory("haproxy")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let port = Self.freePort()
        try """
        global
            pidfile \(dir)/haproxy.pid
        defaults
            mode http
            timeout connect 5s
            timeout client 30s
            timeout server 30s
        frontend fe
            bind 127.0.0.1:\(port)
            http-request return status 200 content-type text/plain string "ok"

        """.write(toFile: dir + "/haproxy.cfg", atomically: true, encoding: .utf8)
        let server = try FixtureProcess(
            ["-W", "-f", dir + "/haproxy.cfg"], executable: URL(fileURLWithPath: "/usr/sbin/haproxy"), waitForReady: false)
        defer { Self.killFamily(server) }
        try #require(waitForPort(port), "haproxy never answered: \(server.output)")
        let (stderr, reports) = try watchServer(pid: server.pid, port: port, directory: dir, block: false) {
            for _ in 0..<2 {
                kill(server.pid, SIGUSR2)
                usleep(2_000_000)
                _ = try? runCommand(URL(fileURLWithPath: "/usr/bin/ab"), ["-q", "-n", "1000", "-c", "20", "http://127.0.0.1:\(port)/"], timeout: 60)
            }
        }
        #expect(stallLines(stderr).isEmpty, "\(stderr)")
        #expect(reports.isEmpty, "\(reports)")
        #expect(stderr.contains("haproxy [\(server.pid)] exec'd /usr/sbin/haproxy"), "\(stderr)")
    }
}
