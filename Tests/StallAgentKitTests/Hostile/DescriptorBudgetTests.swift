import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 27, item 2: descriptors. Past its open-file limit, a family watch lost every new
/// process without a word (and remembered the kernel counters as "not on this kernel"). Now
/// it keeps a reserve, watches what fits, and names what it does not watch.
@Suite struct DescriptorBudgetTests {
    let agent = FixtureProcess.stallagentURL

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit")))
    func attack19_aFamilyPastTheOpenFileLimitIsWatchedAsFarAsItFitsAndTheRestNamed() throws {
        let scratch = try HostileScratch("descriptors")
        let spawner = try FixtureProcess(["spawner", "60"], timeout: 60)
        defer {
            spawner.signal(SIGTERM)
            _ = spawner.waitForExit(timeout: 30)
            spawner.stop()
        }
        let result = try runCommand(
            URL(fileURLWithPath: "/usr/bin/prlimit"),
            [
                "--nofile=150:150", agent.path, "--pid", "\(spawner.pid)", "--follow-children", "--report-dir", scratch.path("reports"),
                "--duration", "5s",
            ], timeout: 60)
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        let lines = result.stderr.split(separator: "\n")
        let watched = lines.filter { $0.contains("'s main thread; reports") }.count
        let named = lines.filter { $0.contains(": not watching ") && $0.contains("open-file limit (150)") }.count
        let total =
            lines.first { $0.contains("were not watched: the agent's open-file limit (150)") }
            .flatMap { line in line.split(separator: " ").firstIndex(of: "processes").map { Int(line.split(separator: " ")[$0 - 1]) } } ?? nil
        #expect(watched >= 10, "\(result.stderr.suffix(2000))")
        #expect(named == min(10, 61 - watched), "\(result.stderr.suffix(2000))")
        #expect(total.map { $0 + watched } == 61, "watched \(watched), not watched \(String(describing: total)): \(result.stderr.suffix(2000))")
        #expect(!result.stderr.contains("no syscall tracepoints"), "\(result.stderr.suffix(2000))")
    }
}
