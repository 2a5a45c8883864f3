import Foundation
import Testing

/// The shipped units, checked offline with systemd's own tools (no running systemd needed).
@Suite struct SystemdUnitTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The units as installed: ExecStart pointing at a real binary (verify needs it), beside a
    /// stub service for the template's instance; the man page on MANPATH for Documentation=.
    func stage() throws -> (dir: String, environment: [String: String]) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("units-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: dir + "/man/man1", withIntermediateDirectories: true)
        let binary = FixtureProcess.stallagentURL.path
        for name in ["stallagent@.service", "stallagent.service"] {
            let text = try String(contentsOf: Self.root.appendingPathComponent("systemd/" + name), encoding: .utf8)
            try text.replacingOccurrences(of: "/usr/local/bin/stallagent", with: binary)
                .write(toFile: dir + "/" + name, atomically: true, encoding: .utf8)
        }
        try FileManager.default.copyItem(atPath: dir + "/stallagent@.service", toPath: dir + "/stallagent@demo.service")
        try "[Unit]\nDescription=demo\n[Service]\nExecStart=/bin/sleep infinity\n".write(toFile: dir + "/demo.service", atomically: true, encoding: .utf8)
        let manual = try runCommand(URL(fileURLWithPath: binary), ["generate-man-page"])
        try #require(manual.status == 0, "\(manual.stderr)")
        try manual.stdout.write(toFile: dir + "/man/man1/stallagent.1", atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        environment["MANPATH"] = dir + "/man"
        return (dir, environment)
    }

    func run(_ arguments: [String], in dir: String, environment: [String: String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/systemd-analyze")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: dir)
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    /// verify exits 0 even on warnings: any output at all is a failure.
    @Test func unitsVerifyWithoutAWord() throws {
        let (dir, environment) = try stage()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try run(["verify", "./stallagent@demo.service", "./stallagent.service"], in: dir, environment: environment)
        #expect(result.status == 0)
        #expect(result.output.isEmpty, "\(result.output)")
    }

    @Test(arguments: ["stallagent@demo.service", "stallagent.service"])
    func unitsAreHardened(unit: String) throws {
        let (dir, environment) = try stage()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try run(["security", "--offline=true", "./" + unit], in: dir, environment: environment)
        let line = try #require(result.output.split(separator: "\n").last { $0.contains("Overall exposure level") })
        let score = try #require(line.split(separator: " ").compactMap { Double($0) }.first)
        #expect(score <= 2.5, "\(line)")
        let text = try String(contentsOfFile: dir + "/" + unit, encoding: .utf8)
        #expect(text.contains("Type=notify") && text.contains("WatchdogSec="))
        #expect(text.contains("SystemCallFilter=@system-service ptrace"))
        #expect(text.contains("NoNewPrivileges=yes") && text.contains("StateDirectory=stallagent"))
        // Issue 27: a family of hundreds of processes needs more than the default 1024.
        #expect(text.contains("LimitNOFILE=65536"))
    }

    /// `journalctl -x` finds both message ids in the shipped catalog.
    @Test func catalogCoversBothMessageIDs() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/usr/lib/systemd/catalog", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/var/lib/systemd/catalog", withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: Self.root.appendingPathComponent("systemd/stallagent.catalog").path,
            toPath: dir + "/usr/lib/systemd/catalog/stallagent.catalog")
        let journalctl = URL(fileURLWithPath: "/usr/bin/journalctl")
        #expect(try runCommand(journalctl, ["--root=" + dir, "--update-catalog"]).status == 0)
        let list = try runCommand(journalctl, ["--root=" + dir, "--list-catalog"])
        #expect(list.stdout.contains("de94fcebce394178ad0dfac6fbcedf89 stallagent: Main thread"), "\(list)")
        #expect(list.stdout.contains("f76371fe2bd14f919cdafde10b128a9b stallagent: Stall of"), "\(list)")
    }
}
