import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 27, item 8: inputs with no bound. A 10 MB configuration with 350 000 targets was
/// checked quadratically and echoed a 20 MB line in its error; `symbolicate` read a 1 GiB
/// "report" whole.
@Suite struct InputBoundsTests {
    let agent = FixtureProcess.stallagentURL

    @Test(.tags(.hostile)) func attack18_hugeConfigurationsAndReportsAreRefusedAtOnceAndBriefly() throws {
        let scratch = try HostileScratch("bounds")

        // 2 MB of targets: refused by its size, before any parsing.
        let big = scratch.path("big.yaml")
        var text = "targets:\n"
        while text.utf8.count < 2 << 20 { text += "  - pid: \(text.utf8.count)\n" }
        try text.write(toFile: big, atomically: true, encoding: .utf8)
        let started = Date()
        let refused = try runCommand(agent, ["--config", big], timeout: 30)
        #expect(refused.status == 78, "\(refused.stderr)")
        #expect(refused.stderr.contains("a configuration is at most 1048576 bytes"), "\(refused.stderr)")
        #expect(Date().timeIntervalSince(started) < 5)

        // A 200 KB value in an error: the message quotes at most a few hundred characters.
        let long = scratch.path("long.yaml")
        try "targets:\n  - pid: 1\n    processes: \(String(repeating: "x", count: 200_000))\n".write(
            toFile: long, atomically: true, encoding: .utf8)
        let quoted = try runCommand(agent, ["--config", long], timeout: 30)
        #expect(quoted.status == 78, "\(quoted.stderr.prefix(300))")
        #expect(quoted.stderr.utf8.count < 1_000, "\(quoted.stderr.utf8.count) bytes of error")
        #expect(quoted.stderr.contains("bytes)"), "\(quoted.stderr.prefix(600))")

        // Many distinct targets are checked in linear time: 20 000 under the size limit.
        let many = scratch.path("many.yaml")
        var targets = "targets:\n"
        for index in 0..<20_000 { targets += "  - pid: \(index + 1)\n" }
        try (targets + "  - pid: 1\n").write(toFile: many, atomically: true, encoding: .utf8)
        let checkStarted = Date()
        let duplicate = try runCommand(agent, ["--config", many], timeout: 60)
        #expect(duplicate.status == 78 && duplicate.stderr.contains("both named"), "\(duplicate.stderr.prefix(600))")
        #expect(Date().timeIntervalSince(checkStarted) < 20)

        // A "report" of 65 MiB (sparse): refused by its size.
        let huge = scratch.path("huge.json")
        _ = FileManager.default.createFile(atPath: huge, contents: nil)
        #expect(truncate(huge, 65 << 20) == 0)
        let symbolicated = try runCommand(agent, ["symbolicate", huge], timeout: 30)
        #expect(symbolicated.status == 64, "\(symbolicated.stderr)")
        #expect(symbolicated.stderr.contains("not a stallagent report (at most 64 MiB)"), "\(symbolicated.stderr)")
    }
}
