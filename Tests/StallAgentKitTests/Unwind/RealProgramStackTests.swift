import Foundation
import Testing

@testable import StallProc
@testable import StallReports
@testable import StallMonitoring

#if canImport(Glibc)
import Glibc
#endif

/// Debian's own PostgreSQL and Node.js, as shipped: the stacks must be eu-stack's. Skipped,
/// with the reason, where the package is not installed (`apt-get install postgresql nodejs`).
@Suite(.serialized, .tags(.laneOne)) struct RealProgramStackTests {
    static let postgres: URL? = {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return versions.sorted().reversed().map { root.appendingPathComponent("\($0)/bin/postgres") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()
    static let node: URL? = ["/usr/bin/node", "/usr/bin/nodejs"].map(URL.init(fileURLWithPath:))
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    static let setpriv = URL(fileURLWithPath: "/usr/bin/setpriv")

    func names(_ dump: ThreadDump) -> [String] { dump.frames.map { $0.function ?? $0.displayName } }

    func expectInOrder(_ expected: [String], in dump: ThreadDump, sourceLocation: SourceLocation = #_sourceLocation) {
        expectSubsequence(expected, of: names(dump), sourceLocation: sourceLocation)
    }

    /// A single-user PostgreSQL backend over a fresh data directory (initdb, about a second),
    /// reading SQL from a pipe we hold. Root runs it as the `postgres` user, as PostgreSQL
    /// refuses to run as root.
    final class SingleUserBackend {
        let process = Process()
        let input = Pipe()
        let directory: URL

        init(postgres: URL) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("stallagent-pg-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var prefix: [String] = []
            if geteuid() == 0 {
                guard let user = getpwnam("postgres") else { throw NativeFixtureError.failed("no postgres user") }
                chown(directory.path, user.pointee.pw_uid, user.pointee.pw_gid)
                prefix = ["--reuid=postgres", "--regid=postgres", "--init-groups", "--"]
            }
            let bin = postgres.deletingLastPathComponent()
            let data = directory.appendingPathComponent("data").path
            let initdb = try runCommand(
                geteuid() == 0 ? RealProgramStackTests.setpriv : bin.appendingPathComponent("initdb"),
                (geteuid() == 0 ? prefix + [bin.appendingPathComponent("initdb").path] : [])
                    + ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"], timeout: 120)
            guard initdb.status == 0 else { throw NativeFixtureError.failed("initdb: \(initdb.stderr)") }
            process.executableURL = geteuid() == 0 ? RealProgramStackTests.setpriv : postgres
            process.arguments =
                (geteuid() == 0 ? prefix + [postgres.path] : [])
                + ["--single", "-D", data, "-F", "-c", "listen_addresses=", "postgres"]
            process.standardInput = input
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        var pid: Int32 { process.processIdentifier }

        func send(_ sql: String) { input.fileHandleForWriting.write(Data((sql + "\n").utf8)) }

        /// Waits until the backend sleeps in `syscall` (a name from the syscall table).
        func waitUntilBlocked(in syscall: String, timeout: Double = 20) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if let text = try? ProcFS.readText("/proc/\(pid)/task/\(pid)/syscall", pid: pid),
                    let info = ProcSyscallInfo.parse(text), info.syscallName == syscall
                {
                    usleep(100_000)
                    return true
                }
                usleep(20_000)
            }
            return false
        }

        deinit {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    func expectSameAsEuStack(_ dump: ThreadDump, pid: Int32, sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard EuStack.url != nil else {
            print("RealProgramStackTests: eu-stack (elfutils) not installed; comparing names only")
            return
        }
        let reference = try EuStack.addresses(pid: pid, tid: pid)
        #expect(
            dump.frames.map(\.address) == reference,
            "ours \(names(dump)) vs eu-stack \(reference.map { String($0, radix: 16) })", sourceLocation: sourceLocation)
    }

    @Test(.enabled(if: RealProgramStackTests.postgres != nil, "PostgreSQL is not installed (apt-get install postgresql)"))
    func postgresBackendIdleAndInPgSleep() throws {
        let backend = try SingleUserBackend(postgres: try #require(RealProgramStackTests.postgres))
        // Idle: reading the next command from its input, stopped by nobody.
        #expect(backend.waitUntilBlocked(in: "read"))
        let inspector = try ProcessInspector(pid: backend.pid)
        let idle = try inspector.dump(tid: backend.pid)
        #expect(idle.captureMethod == .withoutStop)
        #expect(idle.unwindEnd == .complete, "\(names(idle))")
        expectInOrder(["read", "PostgresMain", "PostgresSingleUserMain", "main", "_start"], in: idle)
        try expectSameAsEuStack(idle, pid: backend.pid)

        // pg_sleep: WaitLatch's epoll_wait, the idle wait that must never be stopped.
        backend.send("select pg_sleep(60);")
        #expect(backend.waitUntilBlocked(in: "epoll_wait"))
        let sleeping = try inspector.dump(tid: backend.pid)
        #expect(sleeping.activity == .idle)
        #expect(sleeping.captureMethod == .withoutStop)
        #expect(sleeping.unwindEnd == .complete, "\(names(sleeping))")
        expectInOrder(
            [
                "epoll_wait", "WaitEventSetWait", "WaitLatch", "pg_sleep", "standard_ExecutorRun", "PortalRun", "PostgresMain",
                "PostgresSingleUserMain", "main", "_start",
            ], in: sleeping)
        #expect(!sleeping.frames.contains { $0.module == nil }, "\(names(sleeping))")
        try expectSameAsEuStack(sleeping, pid: backend.pid)
    }

    /// V8 runs JavaScript in JIT code and embedded builtins without CFI: the stack goes through
    /// them by frame record to `_start`, and the JS function is named from the perf map.
    @Test(.enabled(if: RealProgramStackTests.node != nil, "Node.js is not installed (apt-get install nodejs)"))
    func nodeJavaScriptFramesUnwindToStart() throws {
        let node = try #require(RealProgramStackTests.node)
        let process = try FixtureProcess(
            // --perf-basic-prof also turns on V8's log, which would land in the working directory.
            ["--perf-basic-prof", "--logfile=/dev/null", "--no-logfile-per-isolate", "-e", "function burnCpu(){let x=0;for(;;){x+=Math.sqrt(x)}} burnCpu()"],
            executable: node, waitForReady: false)
        defer { unlink("/tmp/perf-\(process.pid).map") }
        // Until V8 has compiled burnCpu and written it to its perf map.
        let map = "/tmp/perf-\(process.pid).map"
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, (try? String(contentsOfFile: map, encoding: .utf8))?.contains("burnCpu") != true { usleep(20_000) }
        let inspector = try ProcessInspector(pid: process.pid)
        var dump = try inspector.dump(tid: process.pid)
        for _ in 0..<20 where !names(dump).contains(where: { $0.contains("burnCpu") }) {
            usleep(100_000)
            dump = try inspector.dump(tid: process.pid)
        }
        #expect(names(dump).contains { $0.contains("burnCpu") }, "\(names(dump))")
        #expect(dump.unwindEnd == .complete, "\(names(dump))")
        #expect(dump.frames.last?.function == "_start", "\(names(dump))")
        expectInOrder(["Builtins_JSEntry", "node::Start(int, char**)", "_start"], in: dump)
        // Below the JavaScript (which moves between samples) the frames are eu-stack's.
        if EuStack.url != nil {
            let reference = try EuStack.addresses(pid: process.pid, tid: process.pid)
            let ours = dump.frames.map(\.address)
            // The outermost entry: JavaScript frames (named by their function, their address
            // the function's) can be below an inner one.
            let entry = try #require(dump.frames.lastIndex { $0.function == "Builtins_JSEntry" })
            let tail = Array(ours[entry...])
            #expect(
                reference.count >= tail.count && Array(reference.suffix(tail.count)) == tail,
                "ours \(names(dump)) vs eu-stack \(reference.map { String($0, radix: 16) })")
        }
    }
}
