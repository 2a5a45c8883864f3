import Foundation
import Testing

@testable import StallReports

#if canImport(Glibc)
import Glibc
#endif

/// Issue 27: a kill that cannot happen is said, never reported as done. The agent runs as root
/// without CAP_KILL (as the shipped units do), the target as another user.
@Suite(.serialized) struct KillRefusalTests {
    static let setpriv = "/usr/bin/setpriv"
    static var canRun: Bool { getuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv) }

    @Test(.tags(.hostile), .enabled(if: canRun, "needs root and setpriv (util-linux)"))
    func attack15_aKillWithoutCapKillIsRefusedAndSaid() throws {
        let target = try FixtureProcess(
            ["--reuid", "65534", "--regid", "65534", "--clear-groups", FixtureProcess.executableURL.path, "loop", "--script", "spin:6", "--gap", "0.2"],
            executable: URL(fileURLWithPath: Self.setpriv))
        defer { target.stop() }
        let reports = FileManager.default.temporaryDirectory.appendingPathComponent("killrefused-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: reports) }
        let result = try runCommand(
            URL(fileURLWithPath: Self.setpriv),
            [
                "--bounding-set", "-kill", FixtureProcess.stallagentURL.path, "--pid", "\(target.pid)", "--report-dir", reports,
                "--threshold", "0.5s", "--launch-threshold", "0.5s", "--kill-after", "1s", "--duration", "3s",
            ], timeout: 30)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("SIGABRT not sent to \(target.pid)"), "\(result.stderr)")
        #expect(result.stderr.contains("CAP_KILL"), "\(result.stderr)")
        #expect(!result.stderr.contains("(terminated") && !result.stderr.contains(", terminated"), "\(result.stderr)")
        #expect(result.stderr.contains("kill refused"), "\(result.stderr)")
        // The target lives on: nothing reached it.
        #expect(kill(target.pid, 0) == 0)
        let files = try FileManager.default.contentsOfDirectory(atPath: reports).filter { $0.hasSuffix(".json") }
        let report = try JSONDecoder().decode(StallReport.self, from: Data(contentsOf: URL(fileURLWithPath: reports + "/" + files[0])))
        #expect(report.termination?.hasPrefix("not terminated: SIGABRT") == true, "\(String(describing: report.termination))")
    }
}
