import Foundation
import Testing

@testable import StallReports

#if canImport(Glibc)
import Glibc
#endif

/// `stallagent watch --pid` of an asyncio server whose handlers stall the loop: one in
/// `time.sleep(3)`, one on CPU for 3 s. Each stall's report names the handler the engineer
/// wrote — culprit, stall frame with its file and line — not the interpreter's C code.
@Suite(.serialized, .tags(.timed)) struct PythonWatchTests {
    typealias P = PythonInterpreters

    @Test(.enabled(if: P.has(P.pyenv311), P.missing(P.pyenv311))) func pyenv311() throws { try check(P.pyenv311) }
    @Test(.enabled(if: P.has(P.pyenv312), P.missing(P.pyenv312))) func pyenv312() throws { try check(P.pyenv312) }
    @Test(.enabled(if: P.has(P.pyenv313), P.missing(P.pyenv313))) func pyenv313() throws { try check(P.pyenv313) }
    @Test(.enabled(if: P.has(P.debian311), P.missing(P.debian311))) func debian311() throws { try check(P.debian311) }

    func check(_ python: String) throws {
        let server = try P.script("aserver.py", P.asyncServer)
        let client = try P.script("client.py", P.client)
        let reports = FileManager.default.temporaryDirectory.appendingPathComponent("pyreports-\(UUID().uuidString)").path
        defer {
            for path in [server, client] { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
            try? FileManager.default.removeItem(atPath: reports)
        }
        let target = try FixtureProcess([server], executable: URL(fileURLWithPath: python))
        defer { target.stop() }
        let port = try #require(target.fields["port"])
        let watch = try FixtureProcess(
            ["watch", "--pid", "\(target.pid)", "--report-dir", reports, "--duration", "60"],
            executable: FixtureProcess.stallagentURL, waitForReady: false)
        defer { watch.stop() }
        // The report directory is made once the agent is attached; give it a few probes to
        // learn the loop's wait before the first request. (Starting the requests as soon as
        // the loop-turn counter was open instead named BaseEventLoop._run_once as debian311's
        // sleep stall frame once in two runs beside two CPU hogs.)
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: reports), Date() < deadline { usleep(20_000) }
        usleep(500_000)
        let exchange = try runCommand(URL(fileURLWithPath: python), [client, port, "sleep", "cpu"], timeout: 30)
        #expect(exchange.stdout.contains("done"), "client: \(exchange.stdout) \(exchange.stderr)")
        // The client prints "done" 0.3 s after the last reply: the loop is idle again, and
        // SIGINT finalises whatever is open anyway.
        watch.signal(SIGINT)
        #expect(watch.waitForExit(timeout: 10))

        let files = try FileManager.default.contentsOfDirectory(atPath: reports).filter { $0.hasSuffix(".json") }
        let decoded = try files.map { name in
            try JSONDecoder().decode(StallReport.self, from: Data(contentsOf: URL(fileURLWithPath: reports + "/" + name)))
        }
        let byCulprit = Dictionary(decoded.map { ($0.culpritFrame?.function ?? "?", $0) }, uniquingKeysWith: { a, _ in a })
        #expect(Set(byCulprit.keys) == ["slow_sleep_handler", "cpu_handler"], "culprits: \(byCulprit.keys.sorted())")

        if let sleep = byCulprit["slow_sleep_handler"] {
            #expect(sleep.reason == .blocked)
            #expect(sleep.stallFrame?.function == "slow_sleep_handler")
            #expect(sleep.stallFrame?.line == 4)
            #expect(sleep.stallFrame?.file == server)
            let names = sleep.heaviestStack?.frames.compactMap(\.function) ?? []
            // The handler runs inside the coroutine `handle`, inside the loop, inside main.
            let handler = names.firstIndex(of: "slow_sleep_handler")
            let coroutine = names.firstIndex(of: "handle")
            #expect(handler != nil && coroutine != nil && handler! < coroutine!, "\(names)")
            #expect(names.last == "_start", "\(names)")
            let text = try String(
                contentsOfFile: reports + "/" + files.first { $0.contains("blocked") }!.replacingOccurrences(of: ".json", with: ".txt"), encoding: .utf8)
            #expect(text.contains("slow_sleep_handler (aserver.py:4)"))
        }
        if let cpu = byCulprit["cpu_handler"] {
            #expect(cpu.reason == .hang || cpu.reason == .starved)
            #expect(cpu.stallFrame?.function == "cpu_handler")
            #expect([10, 11].contains(cpu.stallFrame?.line ?? 0), "line \(cpu.stallFrame?.line ?? 0)")
        }
        #expect(target.procStatus?.tracer == 0)
    }
}
