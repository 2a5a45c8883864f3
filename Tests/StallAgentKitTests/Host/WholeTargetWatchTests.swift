import Foundation
import Testing
@testable import StallProc
@testable import StallReports

#if canImport(Glibc)
import Glibc
#endif

/// A target watched as a whole: every process of a unit's cgroup, or a pid and its
/// descendants (`--follow-children`) — real processes, real ptrace, real nginx where installed.
extension HostAgentIntegrationTests {
    /// Waits until the agent's stderr holds `text`; false after `timeout`.
    func waitForText(_ path: String, _ text: String, timeout: Double = 20) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let stderr = try? String(contentsOfFile: path, encoding: .utf8), stderr.contains(text) { return true }
            usleep(20_000)
        }
        return false
    }

    func occurrences(_ text: String, in stderr: String) -> Int { stderr.components(separatedBy: text).count - 1 }

    func reportStems(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".json") }
    }

    /// The engine (docs/architecture.md): a family asleep in its waits is left alone — each
    /// idle worker is put to sleep once and never woken while it does not move — and only what
    /// moves is probed: a worker sent a signal wakes, alone, and sleeps again; a worker forked
    /// by the sleeping supervisor is attached. Read from the engine's trace.
    @Test func anIdleFamilySleepsAndOnlyWhatMovesWakes() throws {
        let dir = try temporaryDirectory("engine")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let spawner = try FixtureProcess(["spawner", "12", "0.7"])
        defer {
            // SIGTERM: the spawner ends its workers, then itself.
            spawner.signal(SIGTERM)
            _ = spawner.waitForExit(timeout: 10)
            spawner.stop()
        }
        let (agent, stderrPath) = try startAgent(
            ["--pid", "\(spawner.pid)", "--follow-children", "--report-dir", dir, "--duration", "60s"],
            environment: ["STALLAGENT_TRACE_ENGINE": "1"])
        defer { if agent.isRunning { kill(agent.processIdentifier, SIGKILL) } }
        func forked() -> [Int32] {
            spawner.output.split(separator: "\n").compactMap { line in
                line.hasPrefix("forked pid=") ? Int32(line.dropFirst("forked pid=".count).prefix { $0 != " " }) : nil
            }
        }
        let workers = Array(forked().prefix(12))
        #expect(workers.count == 12)
        for worker in workers {
            #expect(waitForText(stderrPath, "[\(worker)]'s main thread"), "worker \(worker) not watched")
            #expect(waitForText(stderrPath, "sleep stall-fixtures[\(worker)]"), "worker \(worker) never put to sleep")
        }
        // One forked while the agent watches, by a supervisor asleep in sigtimedwait.
        let deadline = Date().addingTimeInterval(20)
        var late: Int32?
        while Date() < deadline, late == nil {
            late = forked().first { !workers.contains($0) }
            usleep(20_000)
        }
        let newcomer = try #require(late)
        #expect(waitForText(stderrPath, "[\(newcomer)]'s main thread"))
        let moved = workers[1]
        kill(moved, SIGUSR1)
        #expect(waitForText(stderrPath, "wake stall-fixtures[\(moved)]"))
        let settled = Date().addingTimeInterval(20)
        while Date() < settled,
            occurrences("sleep stall-fixtures[\(moved)]", in: (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "") < 2
        {
            usleep(20_000)
        }
        kill(agent.processIdentifier, SIGTERM)
        #expect(finish(agent) == 0)
        let stderr = try String(contentsOfFile: stderrPath, encoding: .utf8)
        #expect(occurrences("wake stall-fixtures[\(moved)]\n", in: stderr) == 1, "\(stderr)")
        #expect(occurrences("sleep stall-fixtures[\(moved)]\n", in: stderr) == 2, "\(stderr)")
        for worker in workers where worker != moved {
            #expect(occurrences("wake stall-fixtures[\(worker)]\n", in: stderr) == 0, "worker \(worker) woke: \(stderr)")
            #expect(occurrences("sleep stall-fixtures[\(worker)]\n", in: stderr) == 1, "\(stderr)")
        }
        #expect(!stderr.contains(" detected: "), "\(stderr)")
    }

    /// The hard limit on open files, which the agent raises its soft limit to.
    static var hardOpenFileLimit: UInt64 {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return UInt64(limit.rlim_max)
    }

    /// A family of 600 processes, started under the soft limit of 1024 open files that systemd
    /// and most shells give (each watched process holds about seven descriptors): every one is
    /// watched, none refused for want of descriptors.
    @Test(.enabled(if: hardOpenFileLimit >= 8192, "needs a hard open-file limit of 8192 or more"))
    func aFamilyOf600IsWatchedWholeUnderASoftLimitOf1024() throws {
        let dir = try temporaryDirectory("six-hundred")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let spawner = try FixtureProcess(["spawner", "600"], timeout: 60)
        defer {
            spawner.signal(SIGTERM)
            _ = spawner.waitForExit(timeout: 30)
            spawner.stop()
        }
        let command = "ulimit -Sn 1024 && exec '\(agent.path)' --pid \(spawner.pid) --follow-children --report-dir '\(dir)' --duration 300s"
        let (process, stderrPath) = try startAgent(["-c", command], executable: URL(fileURLWithPath: "/bin/sh"))
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let deadline = Date().addingTimeInterval(180)
        var watching = 0
        while Date() < deadline, watching < 601, process.isRunning {
            watching = occurrences("'s main thread; reports", in: (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "")
            usleep(100_000)
        }
        kill(process.processIdentifier, SIGTERM)
        #expect(finish(process, timeout: 60) == 0)
        let stderr = try String(contentsOfFile: stderrPath, encoding: .utf8)
        #expect(watching == 601, "\(stderr.suffix(2000))")
        #expect(!stderr.contains("cannot watch"), "\(stderr.suffix(2000))")
        #expect(!stderr.contains("Too many open files"), "\(stderr.suffix(2000))")
    }

    /// A supervisor (a shell) with two workers, the second forked after the agent attached:
    /// each worker's stall is reported under its own pid, the shell waiting for its children
    /// gives nothing, and the agent ends when the whole family has exited.
    @Test(.tags(.timed)) func followChildrenWatchesEveryWorkerAndNotTheSupervisor() throws {
        let dir = try temporaryDirectory("family")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let worker = "'\(fixtures)' loop --script idle:1,spin:1.5 --gap 0.5 --exit-when-done"
        let family = try FixtureProcess(
            ["-c", "\(worker) & sleep 1.5; \(worker) & wait"], executable: URL(fileURLWithPath: "/bin/sh"),
            waitForReady: false)
        let (agent, stderrPath) = try startAgent(["--pid", "\(family.pid)", "--follow-children", "--report-dir", dir])
        #expect(finish(agent, timeout: 60) == 0)
        let stderr = try String(contentsOfFile: stderrPath, encoding: .utf8)
        let workers = family.output.split(separator: "\n").filter { $0.hasPrefix("ready") }.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("pid=") }.flatMap { Int32($0.dropFirst(4)) }
        }
        #expect(workers.count == 2, "\(family.output)")
        let reports = reportStems(dir)
        for pid in workers {
            // Found between the shell's fork and its exec, a worker is first watched as `sh`,
            // and the new name is then said once (as an exec, or as a new name when the new
            // program's maps were read at start): either way its stall has its own name.
            let execd =
                stderr.contains("watching sh [\(pid)]'s main thread")
                && (stderr.contains("sh [\(pid)] exec'd \(fixtures); reports now name it stall-fixtures")
                    || stderr.contains("sh [\(pid)] is now called stall-fixtures; reports now name it so"))
            #expect(stderr.contains("watching stall-fixtures [\(pid)]'s main thread") || execd, "\(stderr)")
            #expect(occurrences("in stall-fixtures[\(pid)] detected", in: stderr) == 1, "\(stderr)")
            #expect(reports.contains { $0.hasPrefix("stall-fixtures_\(pid)_") && $0.contains("_hang_") }, "\(reports)")
        }
        #expect(!stderr.contains("[\(family.pid)] detected"), "\(stderr)")
        #expect(!reports.contains { $0.contains("_\(family.pid)_") }, "\(reports)")
        #expect(reports.count == 2, "\(reports)")
        // One table for the family at the end, a row per process with its kind (issue 24).
        let rows = stderr.split(separator: "\n").filter { $0.hasPrefix("  \(family.pid) ") }
        #expect(rows.count == 1 && rows[0].contains(" sh ") && rows[0].contains(" supervisor "), "\(stderr)")
        for pid in workers {
            let row = stderr.split(separator: "\n").first { $0.hasPrefix("  \(pid) ") } ?? ""
            #expect(row.contains(" loop ") && row.contains("(exited)"), "\(stderr)")
        }
        // Each scope option goes with its own target kind: usage errors, exit 64.
        for arguments in [["--unit", "a", "--follow-children"], ["--pid", "1", "--main-process-only"], ["--pidfile", "/x", "--follow-children"]] {
            let refused = try runCommand(self.agent, arguments)
            #expect(refused.status == 64 && refused.stderr.contains("goes with"), "\(arguments): \(refused.stderr)")
        }
    }

    /// `--unit`: the unit's every process, found in a (fake) cgroup tree — master and workers,
    /// a worker that joins later — and each bad state of the unit said once, the agent running
    /// on and retrying: not found, inactive (no cgroup), no processes (a oneshot that has
    /// finished), and a cgroup that vanishes with its processes.
    @Test func unitIsWatchedAsAWholeAndBadStatesAreSaidOnce() throws {
        let dir = try temporaryDirectory("unitwide")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let root = dir + "/cgroup"
        let unitDir = root + "/system.slice/web.service"
        let units = dir + "/units"
        try FileManager.default.createDirectory(atPath: root + "/system.slice", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: units, withIntermediateDirectories: true)
        let (process, stderrPath) = try startAgent(
            ["--unit", "web", "--report-dir", dir + "/reports", "--retry-interval", "0.1s", "--duration", "60s"],
            environment: ["STALLAGENT_CGROUP_ROOT": root, "SYSTEMD_UNIT_PATH": units, "STALLAGENT_SYSTEMCTL": "/bin/false"])
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        #expect(waitForText(stderrPath, "unit web.service not found"))
        _ = FileManager.default.createFile(atPath: units + "/web.service", contents: Data())
        #expect(waitForText(stderrPath, "unit web.service is not running (it has no cgroup)"))
        try FileManager.default.createDirectory(atPath: unitDir, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: unitDir + "/cgroup.procs", contents: Data())
        #expect(waitForText(stderrPath, "unit web.service has no processes"))

        let master = try FixtureProcess(["park"])
        // Each worker idles long enough to be seen idle first, even when the agent is slow to
        // attach or busy writing the first stall's report: a worker first seen busy is judged by
        // the launch threshold, and its 1.3 s spin would then be no stall. `first` idled only
        // 0.8 s, and a worker's stall went unreported in 2 runs of 20 here (which one, the
        // report list did not say; `second` already had 2.8 s).
        let first = try FixtureProcess(["loop", "--script", "idle:2.0,spin:1.3", "--gap", "0.3"])
        try "\(master.pid)\n\(first.pid)\n".write(toFile: unitDir + "/cgroup.procs", atomically: true, encoding: .utf8)
        #expect(waitForText(stderrPath, "[\(master.pid)]'s main thread (unit web.service)"))
        #expect(waitForText(stderrPath, "[\(first.pid)]'s main thread (unit web.service)"))
        let second = try FixtureProcess(["loop", "--script", "idle:2.5,spin:1.3", "--gap", "0.3"])
        try "\(master.pid)\n\(first.pid)\n\(second.pid)\n".write(toFile: unitDir + "/cgroup.procs", atomically: true, encoding: .utf8)
        #expect(waitForText(stderrPath, "[\(second.pid)]'s main thread (unit web.service)"))
        #expect(waitForText(stderrPath, "in stall-fixtures[\(first.pid)] detected", timeout: 30))
        #expect(waitForText(stderrPath, "in stall-fixtures[\(second.pid)] detected", timeout: 30))

        // The cgroup vanishes under the agent (here first, so no state between is seen), then
        // the processes it watched exit.
        try FileManager.default.removeItem(atPath: unitDir)
        usleep(300_000)
        for fixture in [first, second, master] { fixture.stop() }
        #expect(waitForText(stderrPath, "web.service: no process left; waiting for the next one"))
        let noCgroup = "unit web.service is not running (it has no cgroup)"
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, occurrences(noCgroup, in: (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "") < 2 {
            usleep(20_000)
        }
        // It starts again: found and watched again.
        try FileManager.default.createDirectory(atPath: unitDir, withIntermediateDirectories: true)
        let again = try FixtureProcess(["idle"])
        try "\(again.pid)\n".write(toFile: unitDir + "/cgroup.procs", atomically: true, encoding: .utf8)
        #expect(waitForText(stderrPath, "[\(again.pid)]'s main thread (unit web.service)"))
        kill(process.processIdentifier, SIGTERM)
        #expect(finish(process) == 0)

        let stderr = try String(contentsOfFile: stderrPath, encoding: .utf8)
        #expect(occurrences("unit web.service not found", in: stderr) == 1, "\(stderr)")
        #expect(occurrences(noCgroup, in: stderr) == 2, "\(stderr)")
        #expect(occurrences("unit web.service has no processes", in: stderr) == 1, "\(stderr)")
        #expect(!stderr.contains("[\(master.pid)] detected"), "\(stderr)")
        #expect(!stderr.contains("error"), "\(stderr)")
        let reports = reportStems(dir + "/reports/web.service")
        for pid in [first.pid, second.pid] {
            #expect(reports.contains { $0.hasPrefix("stall-fixtures_\(pid)_") }, "\(reports)\n\(stderr)")
        }
        #expect(!reports.contains { $0.contains("_\(master.pid)_") }, "\(reports)")
        // The report names the unit beside the process.
        if let name = reports.first(where: { $0.hasPrefix("stall-fixtures_\(first.pid)_") }) {
            let data = try #require(FileManager.default.contents(atPath: dir + "/reports/web.service/" + name))
            let report = try JSONDecoder().decode(StallReport.self, from: data)
            #expect(report.process.unit == "web.service" && report.process.pid == first.pid)
            let text = try String(contentsOfFile: dir + "/reports/web.service/" + name.replacingOccurrences(of: ".json", with: ".txt"), encoding: .utf8)
            #expect(text.contains(StallReportTextRenderer.field("Unit:", "web.service") + "\n"), "\(text)")
        }
    }

    static var hasNginxWithPerl: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx")
            && FileManager.default.fileExists(atPath: "/usr/lib/nginx/modules/ngx_http_perl_module.so")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") && geteuid() == 0
    }

    /// Debian's nginx, two workers, a perl handler that sleeps: a request stalls one worker,
    /// reported under the worker's pid — by `--pid MASTER --follow-children` and by `--unit`
    /// over a cgroup listing the master and workers — while the master, parked in
    /// rt_sigsuspend, gives nothing.
    @Test(.enabled(if: hasNginxWithPerl, "needs root, nginx, libnginx-mod-http-perl and curl (scripts/setup installs them)"))
    func nginxWorkerStallIsReportedUnderTheWorkersPid() throws {
        let dir = try temporaryDirectory("nginx")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        chmod(dir, 0o755)
        try """
        package Stall;
        use nginx;
        sub handler {
            my $r = shift;
            my ($seconds) = ($r->args // '') =~ /s=([0-9]+)/;
            sleep($seconds || 2);
            $r->send_http_header("text/plain");
            $r->print("slept\\n");
            return OK;
        }
        1;
        """.write(toFile: dir + "/Stall.pm", atomically: true, encoding: .utf8)
        // A socket in the test's own directory: no port to collide with (nginx refuses port 0).
        let socket = dir + "/nginx.sock"
        try """
        load_module /usr/lib/nginx/modules/ngx_http_perl_module.so;
        daemon off;
        worker_processes 2;
        pid \(dir)/nginx.pid;
        error_log \(dir)/error.log;
        events { worker_connections 64; }
        http {
            access_log off;
            client_body_temp_path \(dir)/body;
            perl_modules \(dir);
            perl_require Stall.pm;
            server {
                listen unix:\(socket);
                location /stall { perl Stall::handler; }
            }
        }
        """.write(toFile: dir + "/nginx.conf", atomically: true, encoding: .utf8)
        let nginx = Process()
        nginx.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        nginx.arguments = ["-c", dir + "/nginx.conf", "-p", dir, "-e", dir + "/error.log"]
        nginx.standardOutput = FileHandle.nullDevice
        nginx.standardError = FileHandle.nullDevice
        try nginx.run()
        defer {
            kill(nginx.processIdentifier, SIGTERM)
            nginx.waitUntilExit()
        }
        let master = nginx.processIdentifier
        var workers: [Int32] = []
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline, workers.count < 2 {
            workers = ((try? ProcFS.readText("/proc/\(master)/task/\(master)/children")) ?? "")
                .split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            usleep(50_000)
        }
        try #require(workers.count == 2, "nginx did not start two workers: \((try? String(contentsOfFile: dir + "/error.log", encoding: .utf8)) ?? "")")

        // The same cgroup systemd would give nginx.service, with the real processes in it.
        let root = dir + "/cgroup"
        try FileManager.default.createDirectory(atPath: root + "/system.slice/nginx.service", withIntermediateDirectories: true)
        try ([master] + workers).map(String.init).joined(separator: "\n")
            .write(toFile: root + "/system.slice/nginx.service/cgroup.procs", atomically: true, encoding: .utf8)

        for (how, arguments, environment) in [
            ("--follow-children", ["--pid", "\(master)", "--follow-children"], [String: String]()),
            ("--unit", ["--unit", "nginx"], ["STALLAGENT_CGROUP_ROOT": root]),
        ] {
            let reports = dir + "/reports-" + how.dropFirst(2)
            // The request can reach a worker before the agent's first probe of it; a process
            // never yet seen idle is judged by the launch threshold (10 s by default).
            let (agent, stderrPath) = try startAgent(
                arguments + ["--report-dir", reports, "--launch-threshold", "1s"], environment: environment)
            defer { if agent.isRunning { kill(agent.processIdentifier, SIGKILL) } }
            for pid in [master] + workers {
                #expect(waitForText(stderrPath, "[\(pid)]'s main thread"), "\(how)")
            }
            let curl = try runCommand(
                URL(fileURLWithPath: "/usr/bin/curl"), ["-sS", "-m", "20", "--unix-socket", socket, "http://localhost/stall?s=2"], timeout: 30)
            #expect(curl.stdout == "slept\n", "\(how): \(curl.stderr)")
            #expect(waitForText(stderrPath, "stallagent: watching nginx") && waitForText(stderrPath, "0xbaadca11 blocked"), "\(how)")
            usleep(300_000)
            kill(agent.processIdentifier, SIGTERM)
            #expect(finish(agent) == 0, "\(how)")
            let stderr = try String(contentsOfFile: stderrPath, encoding: .utf8)
            let stalled = workers.filter { stderr.contains("in nginx[\($0)] detected") }
            #expect(stalled.count == 1, "\(how): \(stderr)")
            #expect(!stderr.contains("[\(master)] detected"), "\(how): \(stderr)")
            let directory = how == "--unit" ? reports + "/nginx.service" : reports
            let json = reportStems(directory)
            #expect(json.count == 1 && json.allSatisfy { $0.hasPrefix("nginx_\(stalled.first ?? -1)_") }, "\(how): \(json)")
            if let name = json.first {
                let text = try String(contentsOfFile: directory + "/" + name, encoding: .utf8)
                #expect(text.contains("pp_sleep"), "\(how): the heaviest stack names perl's sleep")
            }
        }
    }
}
