import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What the hostile suite's attacks share: a scratch directory playing the attacker's own
/// files, and the agent run as a background process whose stderr can be waited on.
final class HostileScratch {
    let directory: String

    init(_ name: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(name)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { directory + "/" + name }

    /// A private copy of the fixture program, owned by the "attacker".
    func fixtureCopy(named name: String = "victim") throws -> String {
        let destination = path(name)
        try FileManager.default.copyItem(atPath: FixtureProcess.executableURL.path, toPath: destination)
        chmod(destination, 0o755)
        return destination
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }
}

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

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// A program the test built, started and waited for until it prints its first line
/// ("ready"). `stop()` (deferred by the caller, as for `PythonTarget`) kills it.
final class ReadyProgram {
    let process = Process()
    var pid: Int32 { process.processIdentifier }

    init(_ path: String) throws {
        process.executableURL = URL(fileURLWithPath: path)
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        _ = output.fileHandleForReading.availableData
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// Debian's python3 running `script` (`-c`); the test is cancelled where python3 is missing.
/// `stop()` (deferred by the caller: ARC may end an object's life at its last use) kills it.
final class PythonTarget {
    let process = Process()
    var pid: Int32 { process.processIdentifier }

    init(_ script: String) throws {
        let python = "/usr/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: python) else { try Test.cancel("\(python) is missing") }
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script]
        try process.run()
    }

    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// The JSON reports in a directory, decoded as dictionaries.
func hostileJSONReports(in directory: String) -> [[String: Any]] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    return names.filter { $0.hasSuffix(".json") }.sorted().compactMap { name in
        guard let data = FileManager.default.contents(atPath: directory + "/" + name) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }
}
