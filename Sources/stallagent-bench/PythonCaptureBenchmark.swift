import Foundation
import StallDetection
import StallProc
import StallMonitoring

#if canImport(Glibc)
import Glibc
#endif

/// `stallagent bench --python PATH`: what reading Python frames adds to one sample of a
/// CPython process, with and without them alternately on the same process (so load on the
/// machine hits both alike): the target's pause (the chain is copied while it is stopped) and
/// the agent's time for capture + unwind + symbolization.
public struct PythonCaptureBenchmark {
    public var python: String
    public var captures = 200
    /// Python frames on the stack (a recursion under the spinning function).
    public var depth = 30
    public var log: (String) -> Void = {
        print($0)
        fflush(nil)
    }

    public init(python: String) { self.python = python }

    static func script(depth: Int) -> String {
        """
        import sys, time
        def spin():
            x = 0
            while True:
                x += 1
        def nest(n, mode):
            if n == 0:
                print("ready", flush=True)
                if mode == "sleep":
                    time.sleep(3600)
                spin()
            nest(n - 1, mode)
        nest(\(depth), sys.argv[1])
        """
    }

    public func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pybench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = directory.appendingPathComponent("bench.py")
        try PythonCaptureBenchmark.script(depth: depth).write(to: script, atomically: true, encoding: .utf8)
        log("Python frames per sample (\(python), \(depth + 3) Python frames, \(captures) samples each, alternating; µs)")
        log("".padding(toLength: 40, withPad: " ", startingAt: 0) + "     p50     p90     p99   python frames")
        for mode in ["cpu", "sleep"] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: python)
            process.arguments = [script.path, mode]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            defer {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            _ = pipe.fileHandleForReading.availableData  // "ready"
            usleep(200_000)
            let inspector = try ProcessInspector(pid: process.processIdentifier)
            var pauses: [Bool: [Double]] = [:]
            var totals: [Bool: [Double]] = [:]
            var frames: [Int] = []
            let activity: ThreadActivity = mode == "cpu" ? .running : .blockedCall
            for index in 0..<(2 * captures) {
                let withPython = index % 2 == 0
                inspector.readsPythonFrames = withPython
                let start = MonotonicTime.nanos()
                guard let (snapshot, stack) = try? inspector.captureStack(tid: inspector.pid, activity: activity) else { continue }
                let symbolized = inspector.symbolizer.symbolize(stack)
                let end = MonotonicTime.nanos()
                pauses[withPython, default: []].append(Double(snapshot.pauseNanos) / 1000)
                totals[withPython, default: []].append(Double(end - start) / 1000)
                if withPython { frames.append(symbolized.filter(\.isPython).count) }
                usleep(20_000)
            }
            func row(_ label: String, _ values: [Double]?, _ extra: String = "") {
                let p = Percentiles(values ?? [])
                log(
                    label.padding(toLength: 40, withPad: " ", startingAt: 0)
                        + String(format: "%8.1f%8.1f%8.1f", p.p50, p.p90, p.p99) + "  " + extra)
            }
            let seen = frames.sorted()
            let frameText = seen.isEmpty ? "-" : "\(seen[seen.count / 2]) (min \(seen.first!))"
            if mode == "cpu" {
                row("running: target pause, native", pauses[false])
                row("running: target pause, +python", pauses[true], frameText)
            }
            if mode == "sleep", let reader = inspector.python {
                // The part of the pause that is ours: the chain copy alone, and naming it after.
                var copies: [Double] = []
                var resolves: [Double] = []
                for _ in 0..<captures {
                    let start = MonotonicTime.nanos()
                    guard let chain = reader.readChain(tid: inspector.pid) else { continue }
                    let copied = MonotonicTime.nanos()
                    _ = reader.resolve(chain)
                    let end = MonotonicTime.nanos()
                    copies.append(Double(copied - start) / 1000)
                    resolves.append(Double(end - copied) / 1000)
                }
                row("frame chain copy (in the stop window)", copies)
                row("naming the chain (after the resume)", resolves)
            }
            row("\(mode == "cpu" ? "running" : "blocked"): agent time/sample, native", totals[false])
            row("\(mode == "cpu" ? "running" : "blocked"): agent time/sample, +python", totals[true], frameText)
        }
    }
}
