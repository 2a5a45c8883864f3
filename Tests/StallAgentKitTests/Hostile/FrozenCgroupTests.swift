import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 27: time a process spends in a frozen cgroup (`systemctl freeze`, `docker pause`)
/// is not a stall, and `--kill-after` does not fire when it thaws.
@Suite(.serialized) struct FrozenCgroupTests {
    static let freezer = "/sys/fs/cgroup/freezer"
    static var canFreeze: Bool { getuid() == 0 && FileManager.default.isWritableFile(atPath: freezer + "/tasks") }

    static func write(_ text: String, _ path: String) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
    }

    @Test(.tags(.hostile), .enabled(if: canFreeze, "needs root and the cgroup v1 freezer at /sys/fs/cgroup/freezer"))
    func attack14_frozenTimeIsNotAStallAndNoKill() throws {
        let group = Self.freezer + "/stallagent-test-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: group, withIntermediateDirectories: false)
        // A loop busy with short turns: the agent probes it all the time (an idle loop frozen
        // in its epoll_wait never wakes the agent, frozen or not).
        let target = try FixtureProcess(["loop", "--script", "saturate:8", "--gap", "0"])
        defer {
            try? Self.write("THAWED", group + "/freezer.state")
            try? Self.write("\(target.pid)", Self.freezer + "/tasks")
            target.stop()
            rmdir(group)
        }
        try Self.write("\(target.pid)", group + "/tasks")
        let reports = FileManager.default.temporaryDirectory.appendingPathComponent("frozen-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: reports) }
        let agent = Process()
        agent.executableURL = FixtureProcess.stallagentURL
        agent.arguments = [
            "--pid", "\(target.pid)", "--report-dir", reports, "--threshold", "0.5s", "--launch-threshold", "0.5s",
            "--kill-after", "1s", "--duration", "4.5s",
        ]
        let stderrURL = FileManager.default.temporaryDirectory.appendingPathComponent("frozen-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: stderrURL) }
        agent.standardError = try FileHandle(forWritingTo: stderrURL)
        agent.standardOutput = FileHandle.nullDevice
        try agent.run()
        usleep(1_000_000)
        try Self.write("FROZEN", group + "/freezer.state")
        usleep(2_000_000)
        try Self.write("THAWED", group + "/freezer.state")
        agent.waitUntilExit()
        let stderr = (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? ""
        #expect(agent.terminationStatus == 0, "\(stderr)")
        #expect(!stderr.contains("stall #"), "\(stderr)")
        #expect(!stderr.contains("SIGABRT"), "\(stderr)")
        #expect(kill(target.pid, 0) == 0, "the target was killed")
        let jsons = ((try? FileManager.default.contentsOfDirectory(atPath: reports)) ?? []).filter { $0.hasSuffix(".json") }
        #expect(jsons.isEmpty, "\(jsons) \(stderr)")
    }
}
