import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The agent running in the background, stderr to a file.
final class BackgroundAgent {
    let process = Process()
    let stderrPath: String

    init(_ arguments: [String], stderrPath: String) throws {
        self.stderrPath = stderrPath
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = FixtureProcess.stallagentURL
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        try process.run()
    }

    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Waits until stderr contains `text`; false on the deadline or if the agent exited first.
    func waitFor(_ text: String, timeout: Double = 20) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if stderr.contains(text) { return true }
            if !process.isRunning { return stderr.contains(text) }
            usleep(20_000)
        }
        return false
    }

    /// Waits until the agent's CPU time stops growing (0.75 s unchanged): it has read the
    /// target's symbols (2.5 s for node with the debug build, twice that on a busy machine)
    /// and sleeps until the target's thread wakes it. False on the deadline.
    func waitUntilIdle(timeout: Double = 30) -> Bool {
        func cpuTicks() -> Int? {
            guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
                let close = stat.range(of: ")", options: .backwards)
            else { return nil }
            let fields = stat[close.upperBound...].split(separator: " ")
            guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
            return user + system
        }
        let deadline = Date().addingTimeInterval(timeout)
        var last = cpuTicks()
        var steady = 0
        while Date() < deadline, process.isRunning {
            usleep(250_000)
            let now = cpuTicks()
            steady = now == last ? steady + 1 : 0
            if steady >= 3 { return true }
            last = now
        }
        return false
    }

    /// Waits for exit; nil on the deadline (then kills it).
    func waitForExit(timeout: Double = 30) -> (status: Int32, signaled: Bool)? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        return (process.terminationStatus, process.terminationReason == .uncaughtSignal)
    }

    /// Ends the watch with `signal` and waits for it: how it exited, its stderr, and the
    /// names of the text reports in `reports`.
    func finish(signal: Int32 = SIGINT, reports: String, timeout: Double = 30) -> (
        exit: (status: Int32, signaled: Bool)?, stderr: String, texts: [String]
    ) {
        kill(process.processIdentifier, signal)
        let exit = waitForExit(timeout: timeout)
        let texts = (try? FileManager.default.contentsOfDirectory(atPath: reports).filter { $0.hasSuffix(".txt") }) ?? []
        return (exit, stderr, texts)
    }

    /// A watched web server put through its paces, as the real-server tests do it: `ab` at 20
    /// connections for 5 s on `loadPath` (no request may fail, no stall may be said), then one request that
    /// sleeps (`slowPath`, which must answer "slept") and one that spins (`spinPath`), a
    /// second apart.
    func drillServer(url: String, loadPath: String = "", slowPath: String, spinPath: String) throws {
        let curl = URL(fileURLWithPath: "/usr/bin/curl")
        let load = try runCommand(
            URL(fileURLWithPath: "/usr/bin/ab"), ["-q", "-c", "20", "-t", "5", "-n", "10000000", url + loadPath], timeout: 60)
        #expect(load.stdout.contains("Failed requests:        0"), "\(load.stdout)")
        usleep(500_000)
        let healthy = stderr
        #expect(!healthy.contains("stall #"), "a report while healthy: \(healthy)")
        #expect(try runCommand(curl, ["-s", "--max-time", "10", url + slowPath], timeout: 20).stdout == "slept")
        usleep(500_000)
        _ = try runCommand(curl, ["-s", "--max-time", "10", url + spinPath], timeout: 20)
        usleep(1_000_000)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
