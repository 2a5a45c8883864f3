import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A running `stall-fixtures` process for integration tests: started, waited for until it
/// prints its `ready` line, and always killed and reaped.
final class FixtureProcess {
    let process = Process()
    let outputURL: URL
    private(set) var fields: [String: String] = [:]

    var pid: Int32 { process.processIdentifier }

    static var executableURL: URL {
        if let override = ProcessInfo.processInfo.environment["STALL_FIXTURES"] {
            return URL(fileURLWithPath: override)
        }
        // Built next to the test bundle (the test target depends on it).
        let besideTests = Bundle.main.bundleURL.deletingLastPathComponent()
        for dir in [besideTests, besideTests.deletingLastPathComponent(), Bundle.main.bundleURL] {
            let candidate = dir.appendingPathComponent("stall-fixtures")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/stall-fixtures")
    }

    static var stallagentURL: URL {
        FixtureProcess.executableURL.deletingLastPathComponent().appendingPathComponent("stallagent")
    }

    init(
        _ arguments: [String], executable: URL = FixtureProcess.executableURL, waitForReady: Bool = true,
        timeout: Double = 10
    ) throws {
        outputURL = FileManager.default.temporaryDirectory
            .appendingPathComponent("fixture-\(UUID().uuidString).out")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = FileHandle.nullDevice
        try process.run()
        if waitForReady { try self.waitForLine(prefix: "ready", timeout: timeout) }
    }

    var output: String { (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "" }

    /// Waits until a line starting with `prefix` appears; parses its key=value fields.
    @discardableResult
    func waitForLine(prefix: String, timeout: Double = 10) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let line = output.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) {
                for word in line.split(separator: " ") {
                    let parts = word.split(separator: "=", maxSplits: 1)
                    if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
                }
                return String(line)
            }
            if !process.isRunning { break }
            usleep(10_000)
        }
        throw FixtureError.noLine(prefix, output)
    }

    func signal(_ sig: Int32) { kill(pid, sig) }

    /// Waits for exit up to `timeout`; returns false if it is still running.
    func waitForExit(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        return !process.isRunning
    }

    func stop() {
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: outputURL)
    }

    deinit { stop() }

    /// The kernel's view: state letter and tracer.
    var procStatus: (state: Character, tracer: Int32)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        var state: Character = "?"
        var tracer: Int32 = -1
        for line in text.split(separator: "\n") {
            if line.hasPrefix("State:") { state = line.dropFirst(6).trimmingCharacters(in: .whitespaces).first ?? "?" }
            if line.hasPrefix("TracerPid:") { tracer = Int32(line.dropFirst(10).trimmingCharacters(in: .whitespaces)) ?? -1 }
        }
        return (state, tracer)
    }
}

enum FixtureError: Error, CustomStringConvertible {
    case noLine(String, String)
    var description: String {
        switch self {
        case .noLine(let prefix, let output): return "fixture never printed '\(prefix)'; output: \(output)"
        }
    }
}

/// Runs a command to completion, capturing output.
struct CommandResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

func runCommand(_ url: URL, _ arguments: [String], timeout: Double = 60) throws -> CommandResult {
    let process = Process()
    process.executableURL = url
    process.arguments = arguments
    let out = FileManager.default.temporaryDirectory.appendingPathComponent("cmd-\(UUID().uuidString).out")
    let err = FileManager.default.temporaryDirectory.appendingPathComponent("cmd-\(UUID().uuidString).err")
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    _ = FileManager.default.createFile(atPath: err.path, contents: nil)
    defer {
        try? FileManager.default.removeItem(at: out)
        try? FileManager.default.removeItem(at: err)
    }
    process.standardOutput = try FileHandle(forWritingTo: out)
    process.standardError = try FileHandle(forWritingTo: err)
    try process.run()
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
    }
    process.waitUntilExit()
    return CommandResult(
        status: process.terminationStatus,
        stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "")
}
