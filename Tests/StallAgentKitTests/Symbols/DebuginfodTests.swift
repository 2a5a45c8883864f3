import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Debug files fetched by build-id from a real debuginfod server (Debian's `debuginfod`,
/// run here over a directory holding only the fixture's debug file), and servers that hang
/// or serve the wrong file. The fixture runs stripped with no debug file on this machine.
@Suite(.serialized) struct DebuginfodTests {
    static var available: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/debuginfod")
            && FileManager.default.fileExists(atPath: "/usr/lib/x86_64-linux-gnu/libdebuginfod.so.1")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl")
    }

    static let fixture = Result { try NativeFixture.c("debuginfo.c", name: "dbgd") }

    /// A TCP socket bound to a free loopback port (not listening yet), and that port.
    static func boundSocket() -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// A port nothing listens on now (debuginfod cannot bind port 0 itself).
    static func freePort() -> UInt16 {
        let (fd, port) = boundSocket()
        close(fd)
        return port
    }

    static func httpStatus(_ url: String) -> Int {
        let result = try? runCommand(URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "-o", "/dev/null", "-m", "2", "-w", "%{http_code}", url])
        return Int(result?.stdout ?? "") ?? 0
    }

    /// Starts `debuginfod -F directory` and waits until it serves `buildID`.
    static func startServer(serving directory: URL, buildID: String) throws -> (Process, String) {
        for _ in 0..<3 {
            let port = freePort()
            let server = Process()
            server.executableURL = URL(fileURLWithPath: "/usr/bin/debuginfod")
            let database = directory.appendingPathComponent("index-\(port).sqlite")
            server.arguments = ["-F", directory.path, "-d", database.path, "-p", "\(port)", "-t", "0"]
            server.standardOutput = FileHandle.nullDevice
            server.standardError = FileHandle.nullDevice
            try server.run()
            let url = "http://127.0.0.1:\(port)"
            let deadline = Date().addingTimeInterval(30)
            while server.isRunning && Date() < deadline {
                if httpStatus("\(url)/buildid/\(buildID)/debuginfo") == 200 { return (server, url) }
                usleep(200_000)
            }
            Self.kill(server)
        }
        throw NativeFixtureError.failed("debuginfod did not start serving \(buildID)")
    }

    /// SIGKILL: a child of the test process may inherit SIGTERM blocked, and debuginfod
    /// takes its time to stop even when it is not.
    static func kill(_ process: Process) {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    static func dump(pid: Int32, environment: [String]) throws -> CommandResult {
        try runCommand(
            URL(fileURLWithPath: "/usr/bin/env"),
            environment + [FixtureProcess.stallagentURL.path, "dump", "--pid", "\(pid)"], timeout: 60)
    }

    static func temporaryDirectory(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test(.enabled(if: available, "needs debuginfod and libdebuginfod (scripts/setup installs them)")) func strippedBinaryIsNamedFromALocalDebuginfod() throws {
        let fixture = try Self.fixture.get()
        let served = try Self.temporaryDirectory("debuginfod-served")
        defer { try? FileManager.default.removeItem(at: served) }
        try FileManager.default.copyItem(at: fixture.debugFile, to: served.appendingPathComponent("dbgd.debug"))
        let (server, url) = try Self.startServer(serving: served, buildID: fixture.buildID)
        defer { Self.kill(server) }
        let cache = try Self.temporaryDirectory("debuginfod-cache")
        defer { try? FileManager.default.removeItem(at: cache) }

        let target = try FixtureProcess([], executable: fixture.strippedBare)
        defer { target.stop() }
        let without = try Self.dump(pid: target.pid, environment: ["DEBUGINFOD_URLS="])
        #expect(!without.stdout.contains("process_requests"), "no debug file is on this machine: \(without.stdout)")

        let with = try Self.dump(pid: target.pid, environment: ["DEBUGINFOD_URLS=\(url)", "DEBUGINFOD_CACHE_PATH=\(cache.path)"])
        #expect(with.status == 0, "\(with.stderr)")
        #expect(with.stdout.contains("process_requests"), "\(with.stdout)\n\(with.stderr)")
        #expect(with.stdout.contains("wait_for_input [inlined]"), "\(with.stdout)")
        #expect(with.stdout.contains("debuginfo.c:"), "\(with.stdout)")
        #expect(with.stderr.contains("fetching debug info for dbgd-bare"), "\(with.stderr)")
        // The second run finds it in the client's cache.
        let server2 = try Self.dump(pid: target.pid, environment: ["DEBUGINFOD_URLS=\(url)", "DEBUGINFOD_CACHE_PATH=\(cache.path)"])
        #expect(server2.stdout.contains("process_requests"))

        // The watch names the frames in its report too (fetched in the background).
        let reports = try Self.temporaryDirectory("debuginfod-reports")
        defer { try? FileManager.default.removeItem(at: reports) }
        try? FileManager.default.removeItem(at: cache)
        let watch = try runCommand(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "DEBUGINFOD_URLS=\(url)", "DEBUGINFOD_CACHE_PATH=\(cache.path)", FixtureProcess.stallagentURL.path,
                "--pid", "\(target.pid)", "--threshold", "500ms", "--launch-threshold", "500ms", "--duration", "3s",
                "--report-dir", reports.path, "--quiet",
            ], timeout: 60)
        #expect(watch.status == 0, "\(watch.stderr)")
        let json = try #require(
            try FileManager.default.contentsOfDirectory(atPath: reports.path).first { $0.hasSuffix(".json") },
            "no report: \(watch.stderr)")
        let report = try String(contentsOf: reports.appendingPathComponent(json), encoding: .utf8)
        #expect(report.contains("\"process_requests\""), "\(report.prefix(3000))")
        #expect(report.contains("debuginfo.c"))
    }

    /// A server that accepts and never answers costs one bounded wait, then native frames and
    /// a note; the target is never left stopped.
    @Test(.enabled(if: available, "needs debuginfod and libdebuginfod (scripts/setup installs them)")) func hungServerGivesNativeFramesWithinTheDeadline()
        throws
    {
        let fixture = try Self.fixture.get()
        // Accepts (the kernel's backlog) and never answers.
        let (fd, port) = Self.boundSocket()
        defer { close(fd) }
        try #require(port != 0 && listen(fd, 16) == 0)
        let cache = try Self.temporaryDirectory("debuginfod-cache")
        defer { try? FileManager.default.removeItem(at: cache) }

        let target = try FixtureProcess([], executable: fixture.strippedBare)
        defer { target.stop() }
        let started = Date()
        let result = try Self.dump(
            pid: target.pid,
            environment: ["DEBUGINFOD_URLS=http://127.0.0.1:\(port)", "DEBUGINFOD_CACHE_PATH=\(cache.path)", "DEBUGINFOD_MAXTIME=2"])
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(elapsed < 20, "one deadline, not one per module: \(elapsed) s")
        #expect(result.stdout.contains("dbgd-bare + 0x"), "\(result.stdout)")
        #expect(result.stderr.contains("no debug info for"), "\(result.stderr)")
        #expect(target.procStatus?.state != "t")
    }

    /// A server that answers every lookup, but slowly (2.5 s, within the per-lookup deadline):
    /// five stripped modules on the stack made a dump wait for each in turn (issue 27: 32.6 s
    /// for twelve). All the lookups of one command share one `DEBUGINFOD_MAXTIME`.
    @Test(.enabled(if: available, "needs debuginfod and libdebuginfod (scripts/setup installs them)")) func aSlowServerIsWaitedForOnceAcrossModules() throws {
        let directory = try Self.temporaryDirectory("debuginfod-slow")
        defer { try? FileManager.default.removeItem(at: directory) }
        for index in 1...4 {
            let source = directory.appendingPathComponent("l\(index).c").path
            try InflationBombTests.library.replacingOccurrences(of: "bomb_N", with: "bomb_\(index)").write(
                toFile: source, atomically: true, encoding: .utf8)
            let library = directory.appendingPathComponent("libbomb\(index).so").path
            try NativeFixture.run("cc", ["-O1", "-fPIC", "-shared", "-o", library, source])
            try NativeFixture.run("strip", [library])
        }
        let main = directory.appendingPathComponent("main.c").path
        try InflationBombTests.program.write(toFile: main, atomically: true, encoding: .utf8)
        let program = directory.appendingPathComponent("chain").path
        try NativeFixture.run(
            "cc",
            ["-O1", "-o", program, main, "-L", directory.path, "-lbomb1", "-lbomb2", "-lbomb3", "-lbomb4", "-Wl,-rpath," + directory.path])
        try NativeFixture.run("strip", [program])
        let script = directory.appendingPathComponent("slow.py").path
        try """
        import http.server, socketserver, sys, time
        class Slow(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                time.sleep(2.5)
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
            def log_message(self, *args):
                pass
        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
        Server(("127.0.0.1", int(sys.argv[1])), Slow).serve_forever()
        """.write(toFile: script, atomically: true, encoding: .utf8)
        let port = Self.freePort()
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        server.arguments = [script, "\(port)"]
        try server.run()
        defer { Self.kill(server) }
        usleep(500_000)

        let target = try FixtureProcess([], executable: URL(fileURLWithPath: program), waitForReady: false)
        defer { target.stop() }
        usleep(1_300_000)  // inside the chain's 2.5 s sleep, four libraries deep
        let started = Date()
        let result = try Self.dump(
            pid: target.pid,
            environment: [
                "DEBUGINFOD_URLS=http://127.0.0.1:\(port)", "DEBUGINFOD_CACHE_PATH=\(directory.path)/cache", "DEBUGINFOD_MAXTIME=4",
            ])
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(elapsed < 9, "one budget for the command, not one per module: \(elapsed) s; \(result.stderr)")
        #expect(result.stderr.contains("are spent"), "\(result.stderr)")
        #expect(result.stdout.contains("bomb_4"), "\(result.stdout)")
    }

    /// A server that answers with a different file (here another program's debug file) is
    /// never believed: build-ids must match.
    @Test(.enabled(if: available, "needs debuginfod and libdebuginfod (scripts/setup installs them)")) func serverSendingTheWrongFileIsIgnored() throws {
        let fixture = try Self.fixture.get()
        let wrong = try NativeFixture.c("debuginfo.c", name: "other", flags: ["-g", "-O0", "-DOTHER_BUILD=1"])
        #expect(wrong.buildID != fixture.buildID)
        // A plain file server laid out like debuginfod: /buildid/ID/debuginfo.
        let root = try Self.temporaryDirectory("debuginfod-wrong")
        defer { try? FileManager.default.removeItem(at: root) }
        let slot = root.appendingPathComponent("buildid/\(fixture.buildID)")
        try FileManager.default.createDirectory(at: slot, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: wrong.debugFile, to: slot.appendingPathComponent("debuginfo"))
        let python = try #require(["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) })
        var server: Process?
        var url = ""
        for _ in 0..<3 where server == nil {
            let port = Self.freePort()
            let candidate = Process()
            candidate.executableURL = URL(fileURLWithPath: python)
            candidate.arguments = ["-m", "http.server", "--bind", "127.0.0.1", "--directory", root.path, "\(port)"]
            candidate.standardOutput = FileHandle.nullDevice
            candidate.standardError = FileHandle.nullDevice
            try candidate.run()
            let deadline = Date().addingTimeInterval(10)
            while candidate.isRunning && Date() < deadline {
                if Self.httpStatus("http://127.0.0.1:\(port)/buildid/\(fixture.buildID)/debuginfo") == 200 {
                    server = candidate
                    url = "http://127.0.0.1:\(port)"
                    break
                }
                usleep(100_000)
            }
            if server == nil { Self.kill(candidate) }
        }
        let running = try #require(server)
        defer { Self.kill(running) }
        let cache = try Self.temporaryDirectory("debuginfod-cache")
        defer { try? FileManager.default.removeItem(at: cache) }

        let target = try FixtureProcess([], executable: fixture.strippedBare)
        defer { target.stop() }
        let result = try Self.dump(pid: target.pid, environment: ["DEBUGINFOD_URLS=\(url)", "DEBUGINFOD_CACHE_PATH=\(cache.path)"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stdout.contains("process_requests"), "a file with another build-id named frames: \(result.stdout)")
        #expect(result.stdout.contains("dbgd-bare + 0x"), "\(result.stdout)")
    }
}
