import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A stall-fixtures process for the benchmarks: started, waited for until it prints `ready`,
/// stopped with SIGTERM (then SIGKILL), its output file removed.
final class BenchmarkFixture {
    let process = Process()
    let outputURL: URL
    let gapsPath: String?
    private var finished = false

    var pid: Int32 { process.processIdentifier }
    var output: String { (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "" }

    /// `settle`: extra time after `ready` for the fixture to reach its steady state.
    init(_ executable: URL, _ arguments: [String], gapsPath: String? = nil, preload: String? = nil, settle: useconds_t = 0) throws {
        self.gapsPath = gapsPath
        outputURL = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        process.executableURL = executable
        process.arguments = arguments
        if let preload { process.environment = ["LD_PRELOAD": preload] }
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        try process.run()
        _ = waitForLine(prefix: "ready", timeout: 10)
        if settle > 0 { usleep(settle) }
    }

    /// The first output line starting with `prefix`, waiting up to `timeout` seconds.
    func waitForLine(prefix: String, timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if let line = output.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) { return String(line) }
            usleep(5000)
        } while Date() < deadline
        return nil
    }

    /// Stops the fixture and returns the pauses it measured in itself, if it kept a gap log.
    @discardableResult
    func finish() throws -> TargetGapLog? {
        guard !finished else { return nil }
        finished = true
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { usleep(5000) }
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
        unlink(outputURL.path)
        guard let gapsPath else { return nil }
        defer { unlink(gapsPath) }
        return try TargetGapLog(path: gapsPath)
    }

    deinit { _ = try? finish() }
}
