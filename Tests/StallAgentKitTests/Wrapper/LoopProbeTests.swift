import Foundation
import Testing

@testable import StallMonitoring

#if canImport(Glibc)
import Glibc
#endif

/// libstallprobe.so: exact loop boundaries from inside the target.
@Suite(.serialized, .tags(.timed)) struct LoopProbeTests {
    var library: String { FixtureProcess.executableURL.deletingLastPathComponent().appendingPathComponent("libstallprobe.so").path }

    func steps(_ path: String) throws -> [FixtureStep] { try FixtureStep.read(path) }

    @Test func wrapperWithLoopProbeMeasuresStallsExactly() throws {
        try #require(FileManager.default.fileExists(atPath: library), "scripts/setup builds libstallprobe.so")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lp-\(UUID().uuidString)").path
        let log = dir + ".jsonl"
        defer {
            try? FileManager.default.removeItem(atPath: dir)
            unlink(log)
        }
        let result = try runCommand(
            FixtureProcess.stallagentURL,
            [
                "--loop-probe", "--report-dir", dir, "--",
                FixtureProcess.executableURL.path, "loop", "--script", "spin:1.2,sleep:1.1", "--gap", "0.4", "--log", log, "--exit-when-done",
            ])
        #expect(result.status == 0, "\(result.stderr)")
        let truth = try steps(log)
        let reports = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".json") }.sorted()
        #expect(reports.count == 2)
        let durations = try reports.map { name -> Double in
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/" + name))) as? [String: Any]
            return object?["durationSeconds"] as? Double ?? -1
        }.sorted()
        // Exact to the probe's clock reads (0.07 ms on an idle machine). The fixture logs its
        // step a few instructions away from the probe's read; with CPU hogs beside it the
        // thread can lose a whole time slice in between (5.9 ms seen): 12 ms leaves room for
        // that and is still tighter than the /proc probe's two intervals.
        for (reported, step) in zip(durations, truth.map(\.seconds).sorted()) {
            #expect(abs(reported - step) < 0.012, "\(reported) vs \(step)")
        }
    }

    /// A service started with LD_PRELOAD is picked up by `--pid` too.
    @Test func pidModeFindsAPreloadedProbe() throws {
        try #require(FileManager.default.fileExists(atPath: library))
        let process = Process()
        process.executableURL = FixtureProcess.executableURL
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("lp-\(UUID().uuidString).jsonl").path
        defer { unlink(log) }
        process.arguments = ["loop", "--script", "spin:0.9", "--gap", "0.3", "--exit-when-done", "--log", log]
        process.environment = ["LD_PRELOAD": library]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        usleep(100_000)
        var options = MonitorOptions()
        options.reportDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("lp-\(UUID().uuidString)").path
        options.threshold = 0.5
        options.quiet = true
        defer { try? FileManager.default.removeItem(atPath: options.reportDirectory) }
        let monitor = try StallMonitor(pid: process.processIdentifier, options: options, log: { _ in })
        #expect(monitor.loopProbe != nil)
        let summary = monitor.run()
        #expect(summary.stalls.count == 1)
        // The spin is 0.9 s of CPU time: compare with the wall time the fixture logged.
        let logged = try String(contentsOfFile: log, encoding: .utf8)
        let object = try JSONSerialization.jsonObject(with: Data(logged.utf8)) as? [String: Any]
        let truth = try #require(object?["seconds"] as? Double)
        #expect(abs((summary.stalls.first?.duration ?? 0) - truth) < 0.005, "\(summary.stalls.first?.duration ?? 0) vs \(truth)")
    }
}
