import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Issue 26, item 4: an aiohttp server under `ab -c 20`, unwatched and watched, one after the
/// other: its requests/s, the share of the watch's samples that stopped the thread while the
/// server was healthy (read from the agent's metrics file when `ab` ends), and whether its two
/// 1.5 s stalls (a `time.sleep` and a CPU loop, each in a named handler) were still reported
/// with their Python function. Watched a second time with `--no-perf-sampling`: where the
/// kernel's samples are refused, early samples are put off rather than taken with a stop.
struct PythonServerBenchmark {
    var python: String
    var agentBinary: URL
    var log: (String) -> Void = {
        print($0)
        fflush(nil)
    }

    static let app = """
        import sys, time
        from aiohttp import web

        def busy_checkout(seconds):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                pass

        def refresh_inventory():
            time.sleep(1.5)

        async def hello(request):
            return web.Response(text="hello " + str(sum(range(200))))

        async def stall(request):
            refresh_inventory()
            return web.Response(text="slept")

        async def spin(request):
            busy_checkout(1.5)
            return web.Response(text="spun")

        async def ready(app):
            print("ready", flush=True)

        app = web.Application()
        app.add_routes([web.get("/", hello), web.get("/stall", stall), web.get("/spin", spin)])
        app.on_startup.append(ready)
        web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)

        """

    /// The venv `scripts/setup` makes for the tests, when it has aiohttp.
    /// (`.build/pyvenv`, a few directories above the bench binary: `.build/<triple>/release`).
    static func findPython(near bench: URL) -> String? {
        var directory = bench.deletingLastPathComponent()
        var found: String?
        for _ in 0..<4 where found == nil {
            directory = directory.deletingLastPathComponent()
            let candidate = directory.appendingPathComponent("pyvenv/bin/python").path
            if FileManager.default.isExecutableFile(atPath: candidate) { found = candidate }
        }
        guard let python = found else { return nil }
        let check = Process()
        check.executableURL = URL(fileURLWithPath: python)
        check.arguments = ["-c", "import aiohttp"]
        check.standardError = FileHandle.nullDevice
        guard (try? check.run()) != nil else { return nil }
        check.waitUntilExit()
        return check.terminationStatus == 0 ? python : nil
    }

    func run(quick: Bool) throws {
        let seconds = quick ? 5 : 20
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/ab") else {
            log("aiohttp under ab: skipped (apt-get install apache2-utils)")
            return
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("aiobench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = directory.appendingPathComponent("app.py")
        try Self.app.write(to: script, atomically: true, encoding: .utf8)
        let port = 28_089
        log("aiohttp server under ab -c 20 for \(seconds) s, unwatched then watched (threshold 1 s); then one 1.5 s sleep and one 1.5 s CPU stall")
        log("  mode                      requests/s  vs unwatched  samples while healthy  with a stop  stalls named")
        var baseline: Double?
        for mode in ["unwatched", "watched", "watched --no-perf-sampling"] {
            let server = Process()
            server.executableURL = URL(fileURLWithPath: python)
            server.arguments = [script.path, "\(port)"]
            let out = Pipe()
            server.standardOutput = out
            server.standardError = FileHandle.nullDevice
            try server.run()
            defer {
                server.terminate()
                server.waitUntilExit()
            }
            guard String(decoding: out.fileHandleForReading.availableData, as: UTF8.self).contains("ready") else {
                log("  \(mode): the server did not start")
                continue
            }
            var agent: Process?
            let metrics = directory.appendingPathComponent("metrics-\(mode.count).prom").path
            let err = directory.appendingPathComponent("agent-\(mode.count).err")
            if mode != "unwatched" {
                _ = FileManager.default.createFile(atPath: err.path, contents: nil)
                let process = Process()
                process.executableURL = agentBinary
                process.arguments =
                    [
                        "--pid", "\(server.processIdentifier)", "--threshold", "1s", "--report-dir", directory.appendingPathComponent("reports").path,
                        "--metrics-file", metrics, "--metrics-interval", "1s",
                    ] + (mode.hasSuffix("sampling") ? ["--no-perf-sampling"] : [])
                process.standardError = try FileHandle(forWritingTo: err)
                try process.run()
                agent = process
                // The agent reads the interpreter's symbols and learns the loop's wait first.
                sleep(3)
            }
            let rate = Self.ab(port: port, seconds: seconds)
            var healthy: (samples: Int, stops: Int)?
            var named = "-"
            if let agent {
                sleep(2)
                healthy = Self.captures(metrics)
                for path in ["/stall", "/spin"] {
                    _ = Self.ab(port: port, seconds: nil, path: path)
                    usleep(500_000)
                }
                usleep(500_000)
                agent.interrupt()
                agent.waitUntilExit()
                let summary = (try? String(contentsOf: err, encoding: .utf8)) ?? ""
                named = Self.stallNames(summary)
            }
            if mode == "unwatched" { baseline = rate }
            let ratio = rate.flatMap { rate in baseline.map { String(format: "%.2fx", rate / $0) } } ?? "-"
            let samples = healthy.map { "\($0.samples)" } ?? "-"
            let stops = healthy.map { $0.samples > 0 ? String(format: "%d (%.1f %%)", $0.stops, 100 * Double($0.stops) / Double($0.samples)) : "0" } ?? "-"
            log(
                "  " + mode.padding(toLength: 26, withPad: " ", startingAt: 0) + String(format: "%10.0f", rate ?? 0)
                    + ratio.leftPadded(14) + samples.leftPadded(23) + stops.leftPadded(13) + "  " + named)
        }
        log("  goal: ≤ 1 % of healthy samples with a stop; both stalls named by their Python function")
    }

    /// Requests per second of `ab -c 20` for `seconds` (one request when nil).
    static func ab(port: Int, seconds: Int?, path: String = "/") -> Double? {
        let process = Process()
        let pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ab")
        process.arguments =
            (seconds.map { ["-q", "-c", "20", "-t", "\($0)", "-n", "100000000"] } ?? ["-q", "-n", "1"]) + ["http://127.0.0.1:\(port)\(path)"]
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let line = text.split(separator: "\n").first { $0.hasPrefix("Requests per second:") }
        return line.flatMap { Double($0.split(separator: " ").dropFirst(3).first ?? "") }
    }

    /// The captures counted in a metrics file: all of them and those with a stop.
    static func captures(_ path: String) -> (samples: Int, stops: Int)? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        var stops = 0
        var others = 0
        for line in text.split(separator: "\n") where line.hasPrefix("stallagent_captures_total{") {
            let value = Int(Double(line.split(separator: " ").last ?? "") ?? 0)
            if line.contains("method=\"ptrace_stop\"") { stops += value } else { others += value }
        }
        return (stops + others, stops)
    }

    /// "blocked refresh_inventory, hang busy_checkout" from the exit summary's stall rows.
    static func stallNames(_ summary: String) -> String {
        let rows = summary.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            $0.hasPrefix("#") && $0.contains(" 0x")
        }
        let names = rows.map { row -> String in
            let fields = row.split(separator: " ", omittingEmptySubsequences: true)
            return fields.count > 5 ? "\(fields[2]) \(fields[5])" : row
        }
        return names.isEmpty ? "none" : names.joined(separator: ", ")
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? " " + self : String(repeating: " ", count: width - count) + self
    }
}
