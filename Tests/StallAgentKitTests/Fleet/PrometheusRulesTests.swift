import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 30: the shipped Prometheus rules, unit-tested by promtool and run by a real
/// Prometheus server scraping two real agents.
@Suite(.serialized) struct PrometheusRulesTests {
    static let promtool = "/usr/bin/promtool"
    static let prometheus = "/usr/bin/prometheus"
    static let rulesDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("config/prometheus")

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: promtool), "promtool is not installed (scripts/setup installs prometheus)"))
    func promtoolChecksAndTestsEveryRule() throws {
        let check = try runCommand(
            URL(fileURLWithPath: Self.promtool), ["check", "rules", Self.rulesDirectory.appendingPathComponent("stallagent.rules.yml").path])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        let test = try runCommand(
            URL(fileURLWithPath: Self.promtool), ["test", "rules", Self.rulesDirectory.appendingPathComponent("stallagent.rules.test.yml").path])
        #expect(test.status == 0, "\(test.stdout)\(test.stderr)")
        #expect(test.stdout.contains("SUCCESS"), "\(test.stdout)")
    }

    /// Prometheus (Debian's) scrapes two agents every second: one whose loop stalls twice on
    /// the CPU, one watching a real deadlock. The recorded per-fingerprint series, the new
    /// fingerprint alert and the deadlock alert appear in its HTTP API; the deadlock alert
    /// resolves once the deadlocked process is gone.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: prometheus), "prometheus is not installed (scripts/setup installs it)"))
    func aRealPrometheusRecordsAndAlerts() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("prom-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let agent = FixtureProcess.stallagentURL

        // Idle first: Prometheus must have scraped the agent before the first stall, or it
        // never sees the counter rise.
        let looping = try FixtureProcess(["loop", "--script", "idle:8,spin:1.3,spin:1.3", "--gap", "1.5"])
        defer { looping.stop() }
        let deadlocked = try FixtureProcess(["deadlock"])
        defer { deadlocked.stop() }
        var agents: [Process] = []
        defer {
            for process in agents where process.isRunning {
                kill(process.processIdentifier, SIGTERM)
                process.waitUntilExit()
            }
        }
        var ports: [Int] = []
        for (name, fixture) in [("app", looping), ("db", deadlocked)] {
            let process = Process()
            process.executableURL = agent
            process.arguments = [
                "--pid", "\(fixture.pid)", "--name", name, "--report-dir", scratch.appendingPathComponent(name).path,
                "--metrics-listen", "127.0.0.1:0", "--duration", "120s",
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            agents.append(process)
            ports.append(Int(try #require(KernelState.listeningPort(of: process.processIdentifier), "agent \(name) never listened")))
        }

        let webPort = 20_000 + Int.random(in: 0..<20_000)
        let config = scratch.appendingPathComponent("prometheus.yml")
        try """
        global:
          scrape_interval: 1s
          evaluation_interval: 1s
        rule_files:
          - \(Self.rulesDirectory.appendingPathComponent("stallagent.rules.yml").path)
        scrape_configs:
          - job_name: stallagent
            static_configs:
              - targets: [\(ports.map { "'127.0.0.1:\($0)'" }.joined(separator: ", "))]

        """.write(to: config, atomically: true, encoding: .utf8)
        let server = Process()
        server.executableURL = URL(fileURLWithPath: Self.prometheus)
        server.arguments = [
            "--config.file=\(config.path)", "--storage.tsdb.path=\(scratch.appendingPathComponent("data").path)",
            "--web.listen-address=127.0.0.1:\(webPort)",
        ]
        let log = scratch.appendingPathComponent("prometheus.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        server.standardOutput = FileHandle.nullDevice
        server.standardError = try FileHandle(forWritingTo: log)
        try server.run()
        defer {
            if server.isRunning {
                server.terminate()
                server.waitUntilExit()
            }
        }

        func api(_ path: String) -> [String: Any]? {
            guard let result = try? runCommand(URL(fileURLWithPath: "/usr/bin/curl"), ["-sS", "-g", "http://127.0.0.1:\(webPort)\(path)"]),
                let object = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            else { return nil }
            return object["data"] as? [String: Any]
        }
        func query(_ expression: String) -> [[String: Any]] {
            let encoded = expression.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? expression
            return api("/api/v1/query?query=\(encoded)")?["result"] as? [[String: Any]] ?? []
        }
        func alerts() -> [[String: Any]] {
            (api("/api/v1/alerts")?["alerts"] as? [[String: Any]] ?? []).filter { $0["state"] as? String == "firing" }
        }
        func alertNames() -> Set<String> {
            Set(alerts().compactMap { ($0["labels"] as? [String: String])?["alertname"] })
        }
        func waitFor(_ what: String, timeout: Double = 40, _ condition: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if condition() { return true }
                usleep(500_000)
            }
            Issue.record("timed out waiting for \(what); prometheus log: \((try? String(contentsOf: log, encoding: .utf8))?.suffix(1500) ?? "")")
            return false
        }

        _ = waitFor("both agents scraped") { query("up{job=\"stallagent\"} == 1").count == 2 }
        // The deadlock is found and alerted on.
        _ = waitFor("the deadlock alert") { alertNames().contains("StallagentDeadlock") }
        let deadlock = alerts().first { ($0["labels"] as? [String: String])?["alertname"] == "StallagentDeadlock" }
        #expect((deadlock?["labels"] as? [String: String])?["target"] == "db")
        // Two hangs of the loop: their fingerprint's series, the recording across hosts, the
        // new-fingerprint alert.
        _ = waitFor("two stalls of one fingerprint", timeout: 60) {
            query("stallagent_stall_fingerprint_total{target=\"app\"}").contains { ($0["value"] as? [Any])?.last as? String == "2" }
        }
        let series = query("stallagent_stall_fingerprint_total{target=\"app\"}")
        let fingerprint = (series.first?["metric"] as? [String: String])?["fingerprint"] ?? ""
        #expect(fingerprint.hasPrefix("hang-"), "\(series)")
        #expect((series.first?["metric"] as? [String: String])?["culprit"] == "busy_compute", "\(series)")
        _ = waitFor("the recorded per-fingerprint series") {
            query("fingerprint:stallagent_stalls:increase1h").contains { ($0["metric"] as? [String: String])?["fingerprint"] == fingerprint }
        }
        _ = waitFor("the new-fingerprint alert") {
            alerts().contains { ($0["labels"] as? [String: String])?["fingerprint"] == fingerprint }
        }
        #expect(!query("stallagent_loop_busy_ratio{target=\"app\"}").isEmpty)
        #expect(!query("fleet:stallagent_loop_busy:avg").isEmpty)
        // Every query of the shipped Grafana dashboard runs on this server and, but for the
        // stall-seconds rate (no stall in its window may be), finds data.
        let dashboard =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: Self.rulesDirectory.appendingPathComponent("stallagent.dashboard.json"))) as? [String: Any]
        let panels = dashboard?["panels"] as? [[String: Any]] ?? []
        #expect(panels.count >= 6)
        for panel in panels {
            for target in panel["targets"] as? [[String: Any]] ?? [] {
                let expression = (target["expr"] as? String ?? "")
                    .replacingOccurrences(of: "$__range", with: "10m").replacingOccurrences(of: "$__rate_interval", with: "30s")
                let title = panel["title"] as? String ?? "?"
                let encoded = expression.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? expression
                let result = try runCommand(
                    URL(fileURLWithPath: "/usr/bin/curl"), ["-sS", "-g", "http://127.0.0.1:\(webPort)/api/v1/query?query=\(encoded)"])
                #expect(result.stdout.contains(#""status":"success""#), "\(title): \(expression): \(result.stdout)")
                if !title.contains("stalled per second") {
                    #expect(!query(expression).isEmpty, "\(title): \(expression) found nothing")
                }
            }
        }
        // The deadlocked process goes: its stall ends and the alert resolves.
        deadlocked.stop()
        _ = waitFor("the deadlock alert to resolve") { !alertNames().contains("StallagentDeadlock") }
    }
}
