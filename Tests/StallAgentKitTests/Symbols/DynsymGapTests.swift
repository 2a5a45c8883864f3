import ReportTestSupport
import Foundation
import Testing

@testable import StallProc
@testable import StallCapture
@testable import StallReports
@testable import StallMonitoring

@testable import StallSymbols
#if canImport(Glibc)
import Glibc
#endif

/// Stripped binaries with `.dynsym` only: a name is given only when the address is inside the
/// symbol's size; anything else is `module + 0xoffset`, never the neighbour's name.
@Suite(.serialized) struct DynsymGapTests {
    static let binaries: Result<(unstripped: URL, stripped: URL), Error> = Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stallagent-dynsym-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let unstripped = directory.appendingPathComponent("dynsymgaps-g")
        let stripped = directory.appendingPathComponent("dynsymgaps")
        try NativeFixture.run(
            "cc", ["-O2", "-rdynamic", "-o", unstripped.path, NativeFixture.sourceURL("dynsymgaps.c").path])
        try NativeFixture.run("strip", ["--strip-all", "-o", stripped.path, unstripped.path])
        return (unstripped, stripped)
    }

    @Test func staticFunctionsOfAStrippedBinaryAreNotNamedAfterTheirNeighbours() throws {
        let (unstripped, stripped) = try DynsymGapTests.binaries.get()
        let fixture = try FixtureProcess([], executable: stripped)
        try #require(KernelState.waitUntilBlocked(fixture.pid, in: [0]), "never in read()")
        let dump = try ProcessInspector(pid: fixture.pid).dump(tid: fixture.pid)
        let own = dump.frames.filter { $0.module == stripped.lastPathComponent }
        let names = dump.frames.map(\.displayName)
        // hidden_blocker, exported_caller, hidden_outer, main.
        try #require(own.count >= 4, "\(names)")
        let image = try ElfImage(path: unstripped.path)
        func function(at frame: SymbolizedFrame) -> String? {
            image.symbol(forVirtualAddress: try! #require(frame.lookupOffset))?.name
        }
        #expect(own.map(function).prefix(4) == ["hidden_blocker", "exported_caller", "hidden_outer", "main"])
        for frame in own {
            let truth = function(at: frame)
            if truth == "hidden_blocker" || truth == "hidden_outer" {
                #expect(frame.function == nil, "\(frame.displayName) is really \(truth ?? "?")")
                #expect(frame.displayName.hasPrefix("\(stripped.lastPathComponent) + 0x"))
                #expect(frame.buildId != nil && frame.moduleOffset != nil)
            } else if truth == "exported_caller" {
                #expect(frame.function == "exported_caller" && !frame.approximate)
            }
        }
        #expect(!dump.frames.contains { $0.approximate }, "\(names)")
    }

    /// The one-line summary keeps a guessed name's mark.
    @Test func approximateNameKeepsItsMarkInTheSummaryLine() {
        var report = StallReport(snapshot: ReportFixtures.lockEnded(), context: ReportFixtures.context())
        guard var stack = report.heaviestStack, let index = stack.frames.firstIndex(where: { $0.function == "lock_contention" })
        else {
            Issue.record("fixture report has no lock_contention frame")
            return
        }
        stack.frames[index].approximate = true
        report.heaviestStack = stack
        let line = StallSummaryLine.render(report, reportPath: nil)
        #expect(line.contains(" in lock_contention (approximate) ("), "\(line)")
    }

    /// Debian's stripped servers as shipped, named only where eu-stack names them too.
    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") && EuStack.url != nil,
            "nginx or eu-stack (elfutils) is not installed"))
    func nginxWorkerFramesAreNamedOnlyWhereEuStackNamesThem() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stallagent-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("logs"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try """
        daemon off;
        master_process off;
        pid \(directory.path)/nginx.pid;
        error_log \(directory.path)/logs/error.log;
        events { worker_connections 16; }
        http { access_log off; client_body_temp_path \(directory.path); proxy_temp_path \(directory.path);
               fastcgi_temp_path \(directory.path); uwsgi_temp_path \(directory.path); scgi_temp_path \(directory.path);
               server { listen unix:\(directory.path)/nginx.sock; return 200; } }
        """.write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
        let nginx = try FixtureProcess(
            ["-p", directory.path, "-c", directory.appendingPathComponent("nginx.conf").path],
            executable: URL(fileURLWithPath: "/usr/sbin/nginx"), waitForReady: false)
        // Until it sleeps in its event loop.
        var blocked = false
        for _ in 0..<100 where !blocked {
            usleep(20_000)
            blocked =
                (try? ProcFS.readText("/proc/\(nginx.pid)/task/\(nginx.pid)/syscall", pid: nginx.pid))?
                .hasPrefix("232 ") ?? false
        }
        try #require(blocked, "nginx did not reach epoll_wait: \(nginx.output)")
        let dump = try ProcessInspector(pid: nginx.pid).dump(tid: nginx.pid)
        _ = try #require(EuStack.url)
        let reference = try EuStack.frames(pid: nginx.pid, tid: nginx.pid)
        #expect(dump.frames.map(\.address) == reference.map(\.address), "\(dump.frames.map(\.displayName))")
        for (frame, truth) in zip(dump.frames, reference) where frame.module == "nginx" {
            #expect(frame.function == truth.name, "\(frame.displayName) vs eu-stack \(truth.name ?? "(unnamed)")")
            #expect(!frame.approximate)
        }
        #expect(dump.frames.contains { $0.module == "nginx" && $0.function == nil }, "no unnamed nginx frame: the test proves nothing")
    }
}
