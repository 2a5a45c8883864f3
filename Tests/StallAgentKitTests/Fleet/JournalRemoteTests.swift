import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 30: a stall's journal entries, gathered the way Debian ships — a real journald (run
/// on its own in a private mount namespace, so the host's /run is untouched) receives the
/// agent's entries, `systemd-journal-upload` sends the journal to `systemd-journal-remote` on
/// 127.0.0.1, and `journalctl --file` on the collector's file finds the stall by its
/// fingerprint with every field.
@Suite(.serialized) struct JournalRemoteTests {
    static let journald = "/lib/systemd/systemd-journald"
    static let remote = "/lib/systemd/systemd-journal-remote"
    static let upload = "/lib/systemd/systemd-journal-upload"
    static var available: Bool {
        getuid() == 0 && [journald, remote, upload, "/usr/bin/unshare", "/usr/bin/journalctl"].allSatisfy(FileManager.default.isExecutableFile)
    }

    /// Runs in `unshare -m`: journald on tmpfs sockets and storage, the collector, a fixture
    /// that stalls once on the CPU, the agent with its stderr as "the journal", then the upload.
    static let script = """
        set -e
        AGENT=$1; FIXTURES=$2; WORK=$3; PORT=$4
        mkdir -p /run/systemd/journal /run/log/journal
        mount -t tmpfs tmpfs /run/systemd/journal
        mount -t tmpfs tmpfs /run/log
        /lib/systemd/systemd-journald > "$WORK/journald.out" 2>&1 &
        JOURNALD=$!
        for i in $(seq 100); do [ -S /run/systemd/journal/socket ] && break; sleep 0.05; done
        mkdir -p "$WORK/collector"
        /lib/systemd/systemd-journal-remote --listen-http=127.0.0.1:$PORT --split-mode=none \\
            --output="$WORK/collector/remote.journal" > "$WORK/remote.out" 2>&1 &
        REMOTE=$!
        "$FIXTURES" loop --script spin:1.4 --gap 0.3 --exit-when-done > /dev/null &
        TARGET=$!
        : > "$WORK/agent.err"
        JOURNAL_STREAM=$(stat -c '%d:%i' "$WORK/agent.err") timeout 30 "$AGENT" --pid $TARGET \\
            --report-dir "$WORK/reports" --launch-threshold 1s 2>> "$WORK/agent.err" || echo "agent exited $?"
        sleep 0.3
        timeout 30 /lib/systemd/systemd-journal-upload --url=http://127.0.0.1:$PORT -D /run/log/journal --follow=no \\
            > "$WORK/upload.out" 2>&1 || echo "upload exited $?"
        sleep 0.3
        kill $REMOTE $JOURNALD 2>/dev/null || true
        wait $REMOTE 2>/dev/null || true
        """

    @Test(.enabled(if: JournalRemoteTests.available, "needs root, unshare and systemd-journal-remote (scripts/setup installs it)"))
    func aStallsEntriesReachTheCollectorWithEveryField() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("journal-remote-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        // The script's mkdir reaches the host's /run (only its mounts are private): what it
        // creates there is removed again.
        let created = ["/run/systemd/journal", "/run/log/journal"].filter { !FileManager.default.fileExists(atPath: $0) }
        defer { for path in created.reversed() { rmdir(path) } }
        let scriptPath = work.appendingPathComponent("path.sh").path
        try Self.script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        let port = 20_000 + Int(getpid() % 20_000)
        let run = try runCommand(
            URL(fileURLWithPath: "/usr/bin/unshare"),
            [
                "-m", "--propagation", "private", "/bin/sh", scriptPath, FixtureProcess.stallagentURL.path, FixtureProcess.executableURL.path,
                work.path, "\(port)",
            ], timeout: 120)
        func file(_ name: String) -> String { (try? String(contentsOfFile: work.appendingPathComponent(name).path, encoding: .utf8)) ?? "" }
        let context = "\(run.stdout)\(run.stderr)\nagent: \(file("agent.err"))\nupload: \(file("upload.out"))\nremote: \(file("remote.out"))"
        #expect(run.status == 0 && !run.stdout.contains("exited"), "\(context)")

        // The fingerprint the report carries finds both entries on the collector.
        let reports = try FileManager.default.contentsOfDirectory(atPath: work.appendingPathComponent("reports").path).filter { $0.hasSuffix(".json") }
        let data = try Data(contentsOf: work.appendingPathComponent("reports").appendingPathComponent(try #require(reports.first, "\(context)")))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let fingerprint = try #require(json["fingerprint"] as? String, "\(json.keys)")
        let collected = work.appendingPathComponent("collector/remote.journal").path
        let query = try runCommand(
            URL(fileURLWithPath: "/usr/bin/journalctl"), ["--no-pager", "--file", collected, "-o", "json", "STALLAGENT_FINGERPRINT=\(fingerprint)"])
        let entries = query.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(entries.count == 2, "\(query.stdout)\(query.stderr)\n\(context)")
        for entry in entries {
            for field in [
                "MESSAGE", "MESSAGE_ID", "STALLAGENT_REASON", "STALLAGENT_REASON_CODE", "STALLAGENT_FUNCTION", "STALLAGENT_FINGERPRINT",
                "STALLAGENT_BUILD_ID", "STALLAGENT_CULPRIT_FILE", "STALLAGENT_CULPRIT_LINE", "STALLAGENT_STACK", "STALLAGENT_REPORT",
                "_HOSTNAME",
            ] {
                #expect(entry[field] != nil, "\(field) missing from \(entry)")
            }
            // Beside CPU hogs the same spin waits for a CPU and reads starved.
            #expect(["hang", "starved"].contains(entry["STALLAGENT_REASON"] as? String ?? "?"), "\(entry)")
            #expect(entry["STALLAGENT_FUNCTION"] as? String == "busy_compute")
            #expect((entry["STALLAGENT_STACK"] as? String)?.hasSuffix("busy_compute") == true)
        }
        let ended = entries.first { $0["STALLAGENT_ONGOING"] == nil }
        #expect(Double(ended?["STALLAGENT_DURATION_SEC"] as? String ?? "") ?? 0 >= 1.2, "\(entries)")
    }
}
