import Foundation
import Testing

@testable import StallReports

/// Issue 26: one stall has one culprit, the engineer's own function, in every line a person
/// reads: the detection line, the end line, the run's summary table and the report.
@Suite(.serialized) struct CulpritTests {
    static let glib = "/usr/lib/x86_64-linux-gnu/libglib-2.0.so.0"

    /// A GLib handler calling `g_usleep` (GLib) that calls `clock_nanosleep` (libc).
    static func glibHandler() throws -> URL {
        let source = NativeFixture.sourceURL("glib_handler.c")
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("glib_handler-\(UUID().uuidString)")
        try NativeFixture.run("cc", ["-g", "-O1", "-o", output.path, source.path, "-l:libglib-2.0.so.0"])
        return output
    }

    func run(_ program: URL, _ extra: [String] = []) throws -> (CommandResult, [StallReport]) {
        let reports = FileManager.default.temporaryDirectory.appendingPathComponent("culprit-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: reports) }
        let result = try runCommand(
            FixtureProcess.stallagentURL, ["--report-dir", reports] + extra + ["--", program.path], timeout: 60)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: reports).filter { $0.hasSuffix(".json") }) ?? []
        let decoded = try files.map {
            try JSONDecoder().decode(StallReport.self, from: Data(contentsOf: URL(fileURLWithPath: reports + "/" + $0)))
        }
        return (result, decoded)
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: glib), "libglib-2.0 is not installed (scripts/setup installs it)"))
    func aGLibHandlerIsNamedInEveryLine() throws {
        let program = try Self.glibHandler()
        defer { try? FileManager.default.removeItem(at: program) }
        let (result, reports) = try run(program)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(reports.count == 1, "\(result.stderr)")
        let report = try #require(reports.first)
        #expect(report.reason.name == "blocked")
        #expect(report.culpritName == "run_sleep", "\(result.stderr)")
        #expect(report.stallFrame?.function == "run_sleep", "\(String(describing: report.stallFrame))")
        #expect(report.culpritFrame?.line == 19 && report.culpritFrame?.file?.hasSuffix("glib_handler.c") == true)
        // The detection line, the end line and the summary table name the same function.
        let lines = result.stderr.split(separator: "\n").map(String.init)
        let detected = lines.first { $0.contains("detected:") } ?? ""
        let ended = lines.first { $0.hasPrefix("stall #1 ") } ?? ""
        let row = lines.first { $0.contains("0xbaadca11") && !$0.contains("stall #") } ?? ""
        #expect(detected.contains("blocked in run_sleep "), "\(detected)")
        #expect(ended.contains(" in run_sleep ("), "\(ended)")
        #expect(row.hasSuffix("run_sleep"), "\(row)")
        // Marked in the report: the program's frames are its own, GLib's and libc's are not.
        let frames = report.heaviestStack?.frames ?? []
        let own = Set(frames.filter { $0.inApp == true }.compactMap(\.function))
        #expect(own.isSuperset(of: ["run_sleep", "on_tick", "main"]), "\(own)")
        #expect(!frames.contains { $0.inApp == true && ($0.module?.hasPrefix("libc") == true || $0.module?.hasPrefix("libglib") == true) })
    }

    /// `--app-frames` says what is the user's: here GLib's `g_usleep` is, and `run_sleep` is not.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: glib), "libglib-2.0 is not installed (scripts/setup installs it)"))
    func appFramesMovesTheCulprit() throws {
        let program = try Self.glibHandler()
        defer { try? FileManager.default.removeItem(at: program) }
        let (result, reports) = try run(program, ["--app-frames", "g_usleep", "--app-frames", "!run_sleep"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require(reports.first, "\(result.stderr)")
        #expect(report.culpritName == "g_usleep", "\(result.stderr)")
        #expect(report.stallFrame?.function == "g_usleep")
        #expect(result.stderr.contains("blocked in g_usleep "), "\(result.stderr)")
    }
}

/// Issue 30: a fingerprint depends only on what the code is: the same line stalling in two
/// runs (two load addresses) and from a copy at another path is one fingerprint; another line
/// of the same function is another.
@Suite(.serialized) struct FingerprintStabilityTests {
    func fingerprint(_ program: URL, _ argument: String) throws -> String {
        let reports = FileManager.default.temporaryDirectory.appendingPathComponent("fp-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: reports) }
        let result = try runCommand(FixtureProcess.stallagentURL, ["--report-dir", reports, "--", program.path, argument], timeout: 60)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: reports).filter { $0.hasSuffix(".json") }) ?? []
        guard files.count == 1 else { throw NativeFixtureError.failed("\(files.count) reports: \(result.stderr)") }
        let report = try JSONDecoder().decode(StallReport.self, from: Data(contentsOf: URL(fileURLWithPath: reports + "/" + files[0])))
        #expect(report.culpritName == "handle", "\(result.stderr)")
        return report.recurrence.fingerprint
    }

    @Test func theSameLineIsOneFingerprintAnywhere() throws {
        // -O0: an optimiser may merge the two calls into one call site.
        let fixture = try NativeFixture.c("two_sites.c", name: "two_sites", flags: ["-g", "-O0"])
        defer { fixture.remove() }
        let elsewhere = FileManager.default.temporaryDirectory.appendingPathComponent("fp-copy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        // The same file name in another directory: a deploy to another path.
        let copy = elsewhere.appendingPathComponent(fixture.unstripped.lastPathComponent)
        try FileManager.default.copyItem(at: fixture.unstripped, to: copy)

        let first = try fingerprint(fixture.unstripped, "a")
        let again = try fingerprint(fixture.unstripped, "a")
        let copied = try fingerprint(copy, "a")
        let otherLine = try fingerprint(fixture.unstripped, "b")
        #expect(first.hasPrefix("blocked-"))
        #expect(first == again && first == copied, "\([first, again, copied])")
        #expect(otherLine != first)
    }
}

/// Issue 30: the same stall watched with `--pid`, as a unit's process with `--unit`, and wrapped
/// with `-- COMMAND` has the same fingerprint (the report does not depend on how the agent was
/// started).
@Suite(.serialized) struct FingerprintAcrossModesTests {
    static func fingerprints(in directory: String) -> [String] {
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".json") }
        return files.compactMap {
            try? JSONDecoder().decode(StallReport.self, from: Data(contentsOf: URL(fileURLWithPath: directory + "/" + $0))).recurrence.fingerprint
        }
    }

    @Test func pidAndWrappedGiveOneFingerprint() throws {
        // Idle first: the unit leg's agent finds the cgroup and attaches before the stall.
        let script = ["loop", "--script", "idle:1.5,sleep:1.4", "--gap", "0.5", "--exit-when-done"]
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("fp-modes-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: base) }

        let fixture = try FixtureProcess(script)
        let watched = try runCommand(FixtureProcess.stallagentURL, ["--pid", "\(fixture.pid)", "--report-dir", base + "/pid"], timeout: 30)
        fixture.stop()
        let wrapped = try runCommand(
            FixtureProcess.stallagentURL, ["--report-dir", base + "/run", "--", FixtureProcess.executableURL.path] + script, timeout: 30)

        let byPid = Self.fingerprints(in: base + "/pid")
        let byRun = Self.fingerprints(in: base + "/run")
        #expect(byPid.count == 1, "\(watched.stderr)")
        #expect(byRun.count == 1, "\(wrapped.stderr)")
        #expect(byPid.first?.hasPrefix("blocked-") == true)
        #expect(byPid == byRun, "\(byPid) \(byRun)")

        // --unit: the fixture moved into a real cgroup named like a service (this host's
        // cgroup2 hierarchy, found by the agent as it finds a systemd unit's; no systemd here).
        let hierarchy = "/sys/fs/cgroup/unified"
        guard getuid() == 0, FileManager.default.fileExists(atPath: hierarchy + "/cgroup.procs") else { return }
        let unit = "fpdemo-\(UUID().uuidString.prefix(8).lowercased())"
        let slice = hierarchy + "/stallagent-test.slice"
        let cgroup = slice + "/\(unit).service"
        try? FileManager.default.createDirectory(atPath: slice, withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: cgroup, withIntermediateDirectories: false)
        let units = base + "/units"
        try FileManager.default.createDirectory(atPath: units, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: units + "/\(unit).service", contents: Data())
        let member = try FixtureProcess(script)
        defer {
            member.stop()
            rmdir(cgroup)
            rmdir(slice)
        }
        try "\(member.pid)\n".write(toFile: cgroup + "/cgroup.procs", atomically: false, encoding: .utf8)
        let byUnitRun = try runCommand(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "SYSTEMD_UNIT_PATH=\(units)", "STALLAGENT_SYSTEMCTL=/bin/false", FixtureProcess.stallagentURL.path, "--unit", unit,
                "--report-dir", base + "/unit", "--retry-interval", "0.1s", "--duration", "6s",
            ], timeout: 60)
        let byUnit = Self.fingerprints(in: base + "/unit/\(unit).service")
        #expect(byUnitRun.stderr.contains("(unit \(unit).service)"), "\(byUnitRun.stderr)")
        #expect(byUnit.count == 1, "\(byUnitRun.stderr)")
        #expect(byUnit == byPid, "\(byUnit) \(byPid)")
    }
}
