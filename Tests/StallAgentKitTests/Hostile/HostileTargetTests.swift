import ReportTestSupport
import Foundation
import Testing

@testable import StallDetection
@testable import StallCapture
@testable import StallReports
@testable import StallMonitoring
@testable import StallHost

@testable import StallSymbols
#if canImport(Glibc)
import Glibc
#endif

/// Issue 15: the watched process's owner attacks the (often root) agent through the files and
/// strings it controls. Each test is named after its attack and runs it for real against the
/// built agent; the tally of this suite is printed by `scripts/test`.
@Suite(.serialized, .tags(.laneTwo)) struct HostileTests {
    let agent = FixtureProcess.stallagentURL

    // MARK: 1. SIGBUS through a truncated mapped file

    /// The guard itself: a mapped image whose file is truncated reads zeros past the new end
    /// instead of killing this (test) process, and says the file changed.
    @Test(.tags(.hostile)) func attack1_truncatedMappedImageReadsZerosInsteadOfSIGBUS() throws {
        let scratch = try HostileScratch("sigbus-unit")
        let file = try scratch.fixtureCopy()
        let image = try ElfImage(path: file)
        #expect(image.buildID != nil)
        #expect(!image.changedSinceMapping)
        #expect(truncate(file, 0) == 0)
        // Every page of the file: the CRC reads them all.
        _ = image.contentCRC
        _ = image.symbol(forVirtualAddress: image.segments.first { $0.executable }?.virtualAddress ?? 0)
        #expect(image.changedSinceMapping)
    }

    /// The attack as reported: the owner renames another program over the running executable
    /// (maps then says "(deleted)"), waits for the agent to open the path, and truncates it.
    /// The agent must live on and must not lend the module the impostor's build-id.
    @Test(.tags(.hostile)) func attack1_executableRenamedOverAndTruncatedDoesNotKillTheAgent() throws {
        let scratch = try HostileScratch("sigbus")
        let victim = try scratch.fixtureCopy()
        let originalBuildID = try ElfImage(path: victim).buildID
        let target = try FixtureProcess(
            ["loop", "--script", "spin:0.8,spin:0.8,spin:0.8,spin:0.8,spin:0.8,spin:0.8", "--gap", "0.3"],
            executable: URL(fileURLWithPath: victim))
        defer { target.stop() }
        let impostor = scratch.path("impostor")
        try FileManager.default.copyItem(atPath: "/usr/bin/true", toPath: impostor)
        let impostorBuildID = try ElfImage(path: impostor).buildID
        #expect(rename(impostor, victim) == 0)

        let reports = scratch.path("reports")
        let agent = try BackgroundAgent(
            ["--pid", "\(target.pid)", "--report-dir", reports, "--threshold", "0.4s", "--launch-threshold", "0.4s", "--duration", "4s"],
            stderrPath: scratch.path("agent.err"))
        try #require(agent.waitFor("watching"), "\(agent.stderr)")
        #expect(truncate(victim, 0) == 0)
        let ending = agent.waitForExit(timeout: 60)
        #expect(ending?.signaled == false && ending?.status == 0, "ending \(String(describing: ending)): \(agent.stderr.suffix(2000))")
        let jsons = hostileJSONReports(in: reports)
        #expect(!jsons.isEmpty, "\(agent.stderr.suffix(2000))")
        for json in jsons {
            let images = (json["binaryImages"] as? [[String: Any]] ?? []).filter { ($0["path"] as? String)?.hasPrefix(victim) == true }
            #expect(!images.isEmpty)
            for image in images {
                let buildID = image["buildId"] as? String
                #expect(buildID != impostorBuildID)
                #expect(buildID == originalBuildID || image["unavailable"] as? String != nil, "\(image)")
            }
        }
    }

    // MARK: 2. FIFO and hung file systems

    /// The owner replaces the executable by a FIFO: opening it used to block the agent
    /// before it printed "watching".
    @Test(.tags(.hostile)) func attack2_moduleReplacedByFIFODoesNotBlockTheAgent() throws {
        let scratch = try HostileScratch("fifo")
        let victim = try scratch.fixtureCopy()
        let target = try FixtureProcess(
            ["loop", "--script", "spin:0.8,spin:0.8,spin:0.8,spin:0.8", "--gap", "0.3"],
            executable: URL(fileURLWithPath: victim))
        defer { target.stop() }
        #expect(unlink(victim) == 0)
        #expect(mkfifo(victim, 0o644) == 0)
        let reports = scratch.path("reports")
        let result = try runCommand(
            agent, ["--pid", "\(target.pid)", "--report-dir", reports, "--threshold", "0.4s", "--launch-threshold", "0.4s", "--duration", "2.5s"],
            timeout: 30)
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect(result.stderr.contains("watching"))
        #expect(!hostileJSONReports(in: reports).isEmpty, "\(result.stderr.suffix(2000))")
    }

    /// `symbolicate` on a report whose module path names a FIFO finishes instead of hanging.
    @Test(.tags(.hostile)) func attack2_symbolicateWithFIFOModulePathFinishes() throws {
        let scratch = try HostileScratch("fifo-symbolicate")
        let victim = try scratch.fixtureCopy()
        let target = try FixtureProcess(
            ["loop", "--script", "spin:2", "--gap", "0.2"], executable: URL(fileURLWithPath: victim))
        defer { target.stop() }
        let reports = scratch.path("reports")
        let watched = try runCommand(
            agent, ["--pid", "\(target.pid)", "--report-dir", reports, "--threshold", "0.4s", "--launch-threshold", "0.4s", "--duration", "1.5s"],
            timeout: 30)
        try #require(watched.status == 0, "\(watched.stderr)")
        target.stop()
        let json = try #require(try FileManager.default.contentsOfDirectory(atPath: reports).first { $0.hasSuffix(".json") })
        unlink(victim)
        #expect(mkfifo(victim, 0o644) == 0)
        let started = Date()
        let result = try runCommand(agent, ["symbolicate", reports + "/" + json], timeout: 20)
        #expect(Date().timeIntervalSince(started) < 15)
        #expect(result.status == 0 || result.status == 1, "\(result.status): \(result.stderr)")
    }

    /// A file system that never answers (what a hung NFS or FUSE mount does to open/read) is
    /// abandoned at the deadline: the caller gets nil and goes on.
    @Test(.tags(.hostile)) func attack2_fileWorkThatNeverAnswersIsAbandonedAtTheDeadline() throws {
        let scratch = try HostileScratch("hang")
        let fifo = scratch.path("never")
        try #require(mkfifo(fifo, 0o600) == 0)
        let io = BoundedFileIO()
        let started = Date()
        // A blocking open of a FIFO with no writer: the same uninterruptible-looking wait.
        let result = io.run(deadline: 0.3) { open(fifo, O_RDONLY | O_CLOEXEC) }
        let waited = Date().timeIntervalSince(started)
        #expect(result == nil)
        #expect(waited < 3, "waited \(waited) s")
        #expect(io.abandonedWorkers == 1)
        // The next job runs on a fresh worker.
        #expect(io.run(deadline: 5) { 42 } == 42)
        // Release the stuck worker (a writer lets its open return).
        let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        if writer >= 0 { close(writer) }
    }

    // MARK: 3. Deep stacks

    /// Runaway recursion (300 frames) used to exceed the JSON encoder's depth and lose every
    /// format of the report, with a 145 KB error line.
    @Test(.tags(.hostile)) func attack3_deepRecursionStillWritesEveryFormat() throws {
        let scratch = try HostileScratch("deep")
        let target = try FixtureProcess(["deep", "300"])
        defer { target.stop() }
        let reports = scratch.path("reports")
        let result = try runCommand(
            agent,
            [
                "--pid", "\(target.pid)", "--report-dir", reports, "--threshold", "0.4s", "--launch-threshold", "0.4s",
                "--duration", "2s",
            ], timeout: 30)
        #expect(result.status == 0, "\(result.stderr.prefix(2000))")
        #expect(result.stderr.utf8.count < 8000, "stderr is \(result.stderr.utf8.count) bytes")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: reports)) ?? []
        #expect(files.contains { $0.hasSuffix(".txt") }, "\(files)")
        #expect(files.contains { $0.hasSuffix(".folded") }, "\(files)")
        let json = try #require(files.first { $0.hasSuffix(".json") }, "\(files) \(result.stderr.prefix(2000))")
        let data = try Data(contentsOf: URL(fileURLWithPath: reports + "/" + json))
        let report = try JSONDecoder().decode(StallReport.self, from: data)
        let marker = report.callTree.firstNode { $0.function.hasPrefix(CallTreeNode.foldedMarkerPrefix) }
        #expect(marker?.function.hasSuffix("levels folded") == true)
        #expect(report.callTree.first(function: "deep_leaf_spin") != nil)
        let text = try String(contentsOfFile: reports + "/" + json.replacingOccurrences(of: ".json", with: ".txt"), encoding: .utf8)
        #expect(text.contains("levels folded"))
        let folded = try String(contentsOfFile: reports + "/" + json.replacingOccurrences(of: ".json", with: ".folded"), encoding: .utf8)
        #expect(folded.contains("levels folded;"))
        #expect(folded.contains("deep_leaf_spin"))
    }

    // MARK: 4. Terminal-escape and line injection

    /// The owner names the executable (and so comm) and an argument with escape sequences,
    /// a carriage return and a newline that would forge a `stallagent:` line.
    @Test(.tags(.hostile)) func attack4_controlCharactersInNamesArgvAndPathsAreEscaped() throws {
        let scratch = try HostileScratch("escape")
        let evil = "ev\u{1b}[2J\u{1b}]0;pwned\u{07}\r\nstallagent: forged"
        let victim = scratch.path(evil)
        try FileManager.default.copyItem(atPath: FixtureProcess.executableURL.path, toPath: victim)
        let log = scratch.path("log\u{1b}[31m\nstallagent: forged too")
        let target = try FixtureProcess(
            ["loop", "--script", "spin:1.2,spin:1.2", "--gap", "0.3", "--log", log], executable: URL(fileURLWithPath: victim))
        defer { target.stop() }
        let reports = scratch.path("reports")
        let result = try runCommand(
            agent, ["--pid", "\(target.pid)", "--report-dir", reports, "--threshold", "0.4s", "--launch-threshold", "0.4s", "--duration", "2.5s"],
            timeout: 30)
        #expect(result.status == 0, "\(result.stderr)")
        func clean(_ text: String, _ what: String) {
            let controls = text.unicodeScalars.filter { ($0.value < 0x20 && $0 != "\n") || $0.value == 0x7f }
            #expect(controls.isEmpty, "\(what) carries control characters \(controls.map { $0.value })")
            #expect(!text.split(separator: "\n").contains { $0.hasPrefix("stallagent: forged") }, "\(what) has a forged line")
        }
        clean(result.stderr, "stderr")
        #expect(result.stderr.contains("\\x1b"), "\(result.stderr)")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: reports)) ?? []
        let text = try #require(files.first { $0.hasSuffix(".txt") }, "\(files)")
        let rendered = try String(contentsOfFile: reports + "/" + text, encoding: .utf8)
        clean(rendered, ".txt")
        #expect(rendered.contains("\\x1b[2J"))
        let folded = try #require(files.first { $0.hasSuffix(".folded") })
        clean(try String(contentsOfFile: reports + "/" + folded, encoding: .utf8), ".folded")
        // JSON keeps the real bytes, in its own escaping.
        let json = try #require(hostileJSONReports(in: reports).first)
        #expect((json["process"] as? [String: Any])?["path"] as? String == victim)
        // `dump` prints the same names.
        let dump = try runCommand(agent, ["dump", "--pid", "\(target.pid)"], timeout: 30)
        #expect(dump.status == 0, "\(dump.stderr)")
        clean(dump.stdout, "dump")
        #expect(dump.stdout.contains("\\x1b"))
    }

    // MARK: 6. The agent stopped mid-capture

    /// Stops the agent (SIGSTOP, or Ctrl-Z's SIGTSTP) `rounds` times while it samples a busy
    /// target every 5 ms; returns how often the target was still in `t` (held in a ptrace
    /// stop) 50 ms after the agent had stopped: longer than any one capture takes.
    func stopAgentRepeatedly(signal: Int32, rounds: Int) throws -> (frozen: Int, agentStopped: Int) {
        let scratch = try HostileScratch("stop-\(signal)")
        let target = try FixtureProcess(["loop", "--script", "spin:600", "--gap", "0.2"])
        defer { target.stop() }
        let agentPID = try CleanProcess.spawn(
            FixtureProcess.stallagentURL.path,
            [
                // ptrace captures (no kernel samples): the stop windows this is about.
                "--pid", "\(target.pid)", "--report-dir", scratch.path("reports"), "--sample-interval", "5ms",
                "--duration", "300s", "--quiet", "--no-perf-sampling",
            ],
            stderr: scratch.path("agent.err"))
        var ending: CleanProcess.Ending?
        defer {
            if ending == nil {
                kill(agentPID, SIGKILL)
                _ = CleanProcess.wait(agentPID, timeout: 10)
            }
        }
        func state(_ pid: Int32) -> Character? {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let paren = text.lastIndex(of: ")")
            else { return nil }
            return text[text.index(paren, offsetBy: 2)...].first
        }
        func wait(_ condition: () -> Bool, seconds: Double) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if condition() { return true }
                usleep(1_000)
            }
            return condition()
        }
        // Sampling has begun once the agent has been seen tracing the spinning target (each
        // capture seizes it for ~0.1 ms every 5 ms).
        func tracer(_ pid: Int32) -> Int32? {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                let line = text.split(separator: "\n").first(where: { $0.hasPrefix("TracerPid:") })
            else { return nil }
            return Int32(line.dropFirst("TracerPid:".count).trimmingCharacters(in: .whitespaces))
        }
        try #require(KernelState.waitUntilSpinning(target.pid), "the target never spun")
        let deadline = Date().addingTimeInterval(20)
        while tracer(target.pid) != agentPID && Date() < deadline { usleep(100) }
        try #require(tracer(target.pid) == agentPID || Date() < deadline, "the agent never sampled the target")
        var frozen = 0
        var agentStopped = 0
        // Each stop lands at another point of the 5 ms sampling cycle (seeded, so a failure replays).
        var generator = SplitMix64(seed: 0x5709_0006 ^ UInt64(signal))
        for _ in 0..<rounds {
            kill(agentPID, signal)
            if wait({ state(agentPID) == "T" }, seconds: 0.5) { agentStopped += 1 }
            if !wait({ state(target.pid) != "t" }, seconds: 0.05) { frozen += 1 }
            kill(agentPID, SIGCONT)
            usleep(UInt32.random(in: 2_000...15_000, using: &generator))
        }
        #expect(state(agentPID) != nil && state(agentPID) != "Z", "the agent died")
        // The agent is still sampling with ptrace: a capture may hold the target right now,
        // for well under the 50 ms allowed above.
        #expect(wait({ state(target.pid) != "t" }, seconds: 0.05))
        // The agent ends cleanly, with its guardian process reaped.
        kill(agentPID, SIGCONT)
        kill(agentPID, SIGTERM)
        ending = CleanProcess.wait(agentPID, timeout: 20)
        #expect(ending == .exited(0))
        #expect(target.procStatus?.tracer == 0)
        return (frozen, agentStopped)
    }

    @Test(.tags(.hostile, .timed)) func attack6_agentSIGSTOPpedMidWatchNeverLeavesTheTargetStopped() throws {
        let (frozen, stopped) = try stopAgentRepeatedly(signal: SIGSTOP, rounds: 200)
        #expect(frozen == 0, "target left in t after \(frozen) of 200 stops")
        #expect(stopped == 200)
    }

    @Test(.tags(.hostile, .timed)) func attack6_agentCtrlZMidWatchNeverLeavesTheTargetStopped() throws {
        let (frozen, stopped) = try stopAgentRepeatedly(signal: SIGTSTP, rounds: 100)
        #expect(frozen == 0, "target left in t after \(frozen) of 100 Ctrl-Z")
        // Ctrl-Z still stops the agent (deferred to the end of a capture at most).
        #expect(stopped == 100)
    }

    // MARK: 5. Secrets and permissions

    @Test(.tags(.hostile)) func attack5_secretLookingArgumentsAreRedacted() {
        let argv = [
            "server", "--password=hunter2", "--token", "hunter3", "PGPASSWORD=hunter4", "redis://u:hunter5@h:6379/0",
            "-phunter6", "-p", "hunter7", "--db-pass=hunter8", "--url=https://a:hunter9@example.com/x", "--port", "80",
            "--passive", "plain", "--verbose", "--api-key", "--next",
        ]
        let redacted = ArgvRedactor.redact(argv)
        #expect(!redacted.joined(separator: " ").contains("hunter"), "\(redacted)")
        #expect(
            redacted == [
                "server", "--password=<redacted>", "--token", "<redacted>", "PGPASSWORD=<redacted>",
                "redis://u:<redacted>@h:6379/0", "-p<redacted>", "-p", "<redacted>", "--db-pass=<redacted>",
                "--url=https://a:<redacted>@example.com/x", "--port", "80", "--passive", "plain", "--verbose",
                "--api-key", "--next",
            ])
    }

    /// The owner starts a daemon with a password on its command line; the root agent's
    /// reports must not publish it, nor be readable by everyone.
    @Test(.tags(.hostile)) func attack5_reportsCarryNoArgvSecretsAndAreNotWorldReadable() throws {
        let scratch = try HostileScratch("secrets")
        func watch(_ extra: [String]) throws -> (text: String, json: String, directory: String) {
            let target = Process()
            target.executableURL = URL(fileURLWithPath: "/bin/sh")
            target.arguments = [
                "-c", "while :; do :; done", "sh", "--password=hunter2", "--token", "hunter3",
                "PGPASSWORD=hunter4", "redis://user:hunter5@db/0",
            ]
            try target.run()
            defer {
                kill(target.processIdentifier, SIGKILL)
                target.waitUntilExit()
            }
            let reports = scratch.path("reports-\(UUID().uuidString)/nested")
            let result = try runCommand(
                agent,
                [
                    "--pid", "\(target.processIdentifier)", "--report-dir", reports, "--threshold", "0.3s",
                    "--launch-threshold", "0.3s", "--duration", "1.5s",
                ] + extra, timeout: 30)
            #expect(result.status == 0, "\(result.stderr)")
            let files = (try? FileManager.default.contentsOfDirectory(atPath: reports)) ?? []
            let text = try #require(files.first { $0.hasSuffix(".txt") }, "\(files) \(result.stderr)")
            for file in files {
                var info = stat()
                #expect(stat(reports + "/" + file, &info) == 0)
                #expect(info.st_mode & 0o777 == 0o640, "\(file) has mode \(String(info.st_mode & 0o777, radix: 8))")
            }
            var info = stat()
            #expect(stat(reports, &info) == 0 && info.st_mode & 0o777 == 0o750, "directory mode \(String(info.st_mode & 0o777, radix: 8))")
            return (
                try String(contentsOfFile: reports + "/" + text, encoding: .utf8),
                try String(contentsOfFile: reports + "/" + text.replacingOccurrences(of: ".txt", with: ".json"), encoding: .utf8),
                reports
            )
        }
        let redacted = try watch([])
        for content in [redacted.text, redacted.json] {
            #expect(!content.contains("hunter"))
            #expect(content.contains("<redacted>"))
        }
        let kept = try watch(["--keep-argv"])
        #expect(kept.text.contains("--password=hunter2"))
        #expect(kept.json.contains("redis://user:hunter5@db/0"))
    }

    // MARK: 7. The report directory

    /// A link in any component, `..`, and directories others can write are refused (exit 73);
    /// the last component alone used to be checked.
    @Test(.tags(.hostile)) func attack7_reportDirectoryThroughALinkOrWritableByOthersIsRefused() throws {
        let scratch = try HostileScratch("reportdir")
        let real = scratch.path("real")
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: true)
        let link = scratch.path("link")
        #expect(symlink(real, link) == 0)
        // Placed by someone else (a root-owned link in a root-owned directory is trusted).
        #expect(lchown(link, 65534, 65534) == 0)
        let open = scratch.path("open")
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: true)
        chmod(open, 0o777)
        let target = try FixtureProcess(["idle"])
        defer { target.stop() }
        for directory in [link + "/sub", link + "/.", link + "/", real + "/../real", open] {
            let result = try runCommand(agent, ["--pid", "\(target.pid)", "--report-dir", directory, "--duration", "0.5s"], timeout: 30)
            #expect(result.status == 73, "\(directory): \(result.status) \(result.stderr)")
        }
        // Nothing was created through the link.
        #expect((try? FileManager.default.contentsOfDirectory(atPath: real)) == [])
        let fine = try runCommand(agent, ["--pid", "\(target.pid)", "--report-dir", real + "/sub", "--duration", "0.5s"], timeout: 30)
        #expect(fine.status == 0, "\(fine.stderr)")
    }

    /// Someone who could write the directory pre-creates a directory at the report's name:
    /// the report is written under another name instead of being lost.
    @Test(.tags(.hostile)) func attack7_directoryPrecreatedAtTheReportNameDoesNotSuppressTheReport() throws {
        let scratch = try HostileScratch("precreated")
        let directory = scratch.path("reports")
        let writer = try ReportWriter(directory: directory)
        let report = StallReport(snapshot: ReportFixtures.hangEnded(), context: ReportFixtures.context())
        let stem = writer.fileStem(for: report)
        for suffix in [".txt", ".json"] {
            try FileManager.default.createDirectory(atPath: directory + "/" + stem + suffix, withIntermediateDirectories: false)
            _ = FileManager.default.createFile(atPath: directory + "/" + stem + suffix + "/keep", contents: Data())
        }
        let paths = try writer.write(report, folded: nil)
        #expect(paths.text != directory + "/" + stem + ".txt")
        #expect(try String(contentsOfFile: paths.text, encoding: .utf8).contains("Termination Reason:"))
        #expect(FileManager.default.fileExists(atPath: paths.json))
        // A rewrite of the same stall keeps the name it got.
        #expect(try writer.write(report, folded: nil).text == paths.text)
    }

    // MARK: 8. The rest

    /// A target stalling every second for months: the exit summary counts every stall but
    /// keeps only the longest `maxKeptStalls` (it grew by ~1 KB per stall, forever).
    @Test(.tags(.hostile)) func attack8_exitSummaryMemoryIsBoundedAcrossManyStalls() {
        var summary = MonitorSummary(pid: 1, name: "t", watchedSeconds: 1000, reportDirectory: "r")
        for index in 0..<1000 {
            summary.record(
                MonitorSummary.Stall(
                    id: index + 1, reason: index % 2 == 0 ? .hang : .blocked, phase: .loop, duration: 1 + Double(index % 37) / 10,
                    startMonotonic: 0, endMonotonic: 1, topFunction: "f", heaviestFunctions: ["f", "main"], deadlock: false,
                    lockOwnerName: nil, firstWrittenMonotonic: nil, reportPath: "p", occurrence: 1, terminated: false))
        }
        #expect(summary.stallCount == 1000)
        #expect(summary.stalls.count == MonitorSummary.maxKeptStalls)
        #expect(summary.stalls.allSatisfy { $0.duration >= 1 + 3.3 })
        let text = summary.render()
        #expect(text.contains("1000 stalls"))
        #expect(text.contains("by reason: blocked 500, hang 500"))
        #expect(text.contains("… 900 shorter stalls not listed"))
        #expect(text.contains("worst: "))
    }

    /// One client sending a byte every 1.5 s used to hold the metrics listener (each byte
    /// reset its receive timeout) and block every scrape behind it.
    @Test(.tags(.hostile)) func attack8_slowMetricsClientBlocksNoScrape() throws {
        let listener = try MetricsListener(address: "127.0.0.1:0", render: { "stallagent_up 1\n" })
        listener.start()
        defer { listener.stop() }
        func connectClient() throws -> Int32 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = listener.port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            try #require(rc == 0)
            return fd
        }
        // Two slow clients dribbling a request.
        let slow = try (0..<2).map { _ in try connectClient() }
        let dribble = Thread {
            for _ in 0..<4 {
                for fd in slow { _ = send(fd, "G", 1, Int32(MSG_NOSIGNAL)) }
                usleep(1_500_000)
            }
        }
        dribble.start()
        usleep(200_000)
        // A real scrape answers at once.
        let started = Date()
        let scraper = try connectClient()
        defer { close(scraper) }
        let request = "GET /metrics HTTP/1.0\r\n\r\n"
        _ = send(scraper, request, request.utf8.count, Int32(MSG_NOSIGNAL))
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(scraper, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            response += buffer[0..<n]
        }
        let waited = Date().timeIntervalSince(started)
        let text = String(decoding: response, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200"), "\(text)")
        #expect(text.contains("stallagent_up 1"))
        #expect(waited < 1.0, "the scrape waited \(waited) s")
        // The slow clients are cut off at the deadline (EOF), not served forever.
        usleep(2_500_000)
        for fd in slow {
            var byte: UInt8 = 0
            let n = recv(fd, &byte, 1, Int32(MSG_DONTWAIT))
            #expect(n == 0 || (n < 0 && errno == ECONNRESET), "slow client still connected (\(n), errno \(errno))")
            close(fd)
        }
    }

    /// A target already traced (strace) cannot be sampled with ptrace: said once, with the
    /// tracer, and every report says so instead of naming a stall from a stale stack. Where
    /// perf_event sampling is permitted, its running thread is sampled all the same.
    @Test(.tags(.hostile)) func attack8_alreadyTracedTargetIsReportedOnceAsUnsampled() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/strace") else {
            try Test.cancel("strace is not installed (scripts/setup installs it)")
        }
        let scratch = try HostileScratch("traced")
        // Stalls enough for two 4 s watches one after the other (the second one samples by
        // perf_event); the fixture goes idle once its script is done.
        let target = try FixtureProcess(["loop", "--script", Array(repeating: "spin:1.5", count: 8).joined(separator: ","), "--gap", "0.3"])
        defer { target.stop() }
        let strace = Process()
        strace.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        strace.arguments = ["-p", "\(target.pid)", "-o", "/dev/null"]
        strace.standardError = FileHandle.nullDevice
        try strace.run()
        defer {
            // SIGKILL: the test thread's signal mask (inherited) can block SIGTERM; a killed
            // tracer's tracees are detached by the kernel.
            kill(strace.processIdentifier, SIGKILL)
            strace.waitUntilExit()
        }
        let deadline = Date().addingTimeInterval(10)
        while target.procStatus?.tracer != strace.processIdentifier && Date() < deadline { usleep(10_000) }
        try #require(target.procStatus?.tracer == strace.processIdentifier)
        let reports = scratch.path("reports")
        let result = try runCommand(
            agent,
            ["--pid", "\(target.pid)", "--report-dir", reports, "--threshold", "0.4s", "--launch-threshold", "0.4s", "--duration", "4s", "--no-perf-sampling"],
            timeout: 30)
        #expect(result.status == 0, "\(result.stderr)")
        let note = "cannot sample: traced by PID \(strace.processIdentifier) (strace)"
        #expect(result.stderr.components(separatedBy: note).count - 1 == 1, "\(result.stderr)")
        for json in hostileJSONReports(in: reports) {
            #expect(json["sampling"] as? String == note)
            // Stacks read without a stop (the thread sits in strace's syscall stops) are real;
            // a ptrace-stopped one cannot be had. Never the loop's idle wait.
            let frames = (json["heaviestStack"] as? [String: Any])?["frames"] as? [[String: Any]] ?? []
            let names = frames.compactMap { $0["function"] as? String }
            #expect(frames.isEmpty || names.contains("busy_compute"), "\(names)")
        }
        // A traced loop is not always seen idle (its waits are interrupted by the tracer's
        // stops), so it may still count as starting up: the launch threshold is the same here.
        guard PerfSamplingTests.available else { return }
        let sampled = scratch.path("sampled")
        let perf = try runCommand(
            agent, ["--pid", "\(target.pid)", "--report-dir", sampled, "--threshold", "0.4s", "--launch-threshold", "0.4s", "--duration", "4s"],
            timeout: 30)
        #expect(perf.status == 0, "\(perf.stderr)")
        let jsons = hostileJSONReports(in: sampled)
        #expect(!jsons.isEmpty, "\(perf.stderr)")
        #expect(
            jsons.contains { json in
                let frames = (json["heaviestStack"] as? [String: Any])?["frames"] as? [[String: Any]] ?? []
                return frames.contains { $0["function"] as? String == "busy_compute" }
            }, "\(perf.stderr)")
    }

    /// After an exec, reports named the old program (name, path, build-id, command line).
    @Test(.tags(.hostile)) func attack8_execReloadsTheProcessIdentity() throws {
        let scratch = try HostileScratch("exec")
        let other = try scratch.fixtureCopy(named: "otherprog")
        // The exec waits for the agent's first look (a flag file): on a loaded machine a fixed
        // sleep let the exec happen before the agent attached, and there was no exec to see.
        let flag = scratch.path("go")
        let target = try PythonTarget(
            "import os, time\nwhile not os.path.exists('\(flag)'): time.sleep(0.02)\ntime.sleep(0.3)\n"
                + "os.execv('\(other)', ['\(other)', 'loop', '--script', 'spin:1.2,spin:1.2', '--gap', '0.3'])")
        defer { target.stop() }
        let reports = scratch.path("reports")
        let agentRun = try BackgroundAgent(
            ["--pid", "\(target.pid)", "--report-dir", reports, "--threshold", "0.4s", "--launch-threshold", "0.4s", "--duration", "4.5s"],
            stderrPath: scratch.path("agent.stderr"))
        #expect(agentRun.waitFor("watching python3"), "\(agentRun.stderr)")
        _ = FileManager.default.createFile(atPath: flag, contents: nil)
        let exit = agentRun.waitForExit(timeout: 30)
        let result = (status: exit?.status ?? -1, stderr: agentRun.stderr)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("exec'd \(other)"), "\(result.stderr)")
        let after = hostileJSONReports(in: reports).filter { (($0["process"] as? [String: Any])?["name"] as? String) == "otherprog" }
        let process = try #require(after.first?["process"] as? [String: Any], "\(result.stderr)")
        #expect(process["path"] as? String == other)
        #expect((process["commandLine"] as? [String])?.contains("loop") == true)
        #expect(process["buildId"] as? String == (try ElfImage(path: other).buildID))
    }

    /// A process that renames itself (prctl PR_SET_NAME) mid-stall is not an exec: the stall
    /// goes on as one, and its report takes the new name. (Python's heap moves the maps all
    /// the time, so a changed name beside changed maps was once taken for an exec.)
    @Test(.tags(.hostile)) func attack8_renameMidStallKeepsTheStallAndTakesTheName() throws {
        let scratch = try HostileScratch("rename")
        let target = try PythonTarget(
            """
            import ctypes, time
            libc = ctypes.CDLL(None)
            def spin(seconds):
                end = time.time() + seconds
                while time.time() < end: pass
            def work():
                spin(1.0)
                libc.prctl(15, b"renamed", 0, 0, 0)
                spin(1.5)
            time.sleep(0.6)
            work()
            time.sleep(30)
            """)
        defer { target.stop() }
        let reports = scratch.path("reports")
        let result = try runCommand(
            agent,
            ["--pid", "\(target.pid)", "--report-dir", reports, "--threshold", "0.5s", "--launch-threshold", "0.5s", "--duration", "4.5s"],
            timeout: 30)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("[\(target.pid)] is now called renamed; reports now name it so"), "\(result.stderr)")
        #expect(!result.stderr.contains("exec'd"), "\(result.stderr)")
        let names = hostileJSONReports(in: reports).compactMap { ($0["process"] as? [String: Any])?["name"] as? String }
        #expect(names == ["renamed"], "\(result.stderr)")
        #expect(result.stderr.contains("watched renamed [\(target.pid)]"), "\(result.stderr)")
    }
}

extension CallTreeNode {
    func firstNode(where matches: (CallTreeNode) -> Bool) -> CallTreeNode? {
        if matches(self) { return self }
        for child in children {
            if let found = child.firstNode(where: matches) { return found }
        }
        return nil
    }
}
