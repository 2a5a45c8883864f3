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
