import Foundation
import Testing
@testable import StallHost

@Suite struct AgentMetricsTests {
    @Test func rendersValidPrometheusText() throws {
        let metrics = AgentMetrics()
        metrics.setTargetUp("nginx.service", true)
        metrics.recordAttach(target: "nginx.service")
        metrics.recordStall(target: "nginx.service", reason: .hang, duration: 1.5)
        metrics.recordStall(target: "nginx.service", reason: .hang, duration: 3)
        metrics.recordStall(target: "we\"ird\\name\n", reason: .lock, duration: 0.4)
        metrics.update(
            target: "nginx.service", monitorKey: "1", stateSeconds: [.idle: 10, .running: 2], pauseSeconds: 0.001,
            capturesWithStop: 4, capturesWithoutStop: 1)
        // Cumulative inputs: only the difference is added.
        metrics.update(
            target: "nginx.service", monitorKey: "1", stateSeconds: [.idle: 12, .running: 2], pauseSeconds: 0.002,
            capturesWithStop: 6, capturesWithoutStop: 1)
        metrics.updateLoop(target: "nginx.service", monitorKey: "1", turns: 900, evidence: .kernelCounter, turnLengths: [0.01, 1.5])
        metrics.updateLoop(target: "nginx.service", monitorKey: "1", turns: 1000, evidence: .kernelCounter, turnLengths: [0.02])
        metrics.touch()
        let text = metrics.render()
        #expect(text.contains(#"stallagent_loop_turns_total{target="nginx.service",evidence="kernel_counter"} 1000"#), "\(text)")
        #expect(text.contains(#"stallagent_loop_busy_turn_seconds_count{target="nginx.service"} 3"#))
        #expect(text.contains(#"stallagent_stalls_total{target="nginx.service",reason="hang",code="0x8badf00d"} 2"#))
        #expect(text.contains(#"stallagent_stall_duration_seconds_count{target="nginx.service"} 2"#))
        #expect(text.contains(#"stallagent_main_thread_state_seconds_total{target="nginx.service",state="idle"} 12"#))
        #expect(text.contains(#"stallagent_captures_total{target="nginx.service",method="ptrace_stop"} 6"#))
        #expect(text.contains("stallagent_build_info{version="))
        #expect(text.contains("stallagent_last_update_timestamp_seconds"))
        #expect(text.hasSuffix("\n"))
        try PromtoolCheck.check(text)
    }

    /// Issue 30: per-fingerprint counts with bounded cardinality, stalls going on by reason and
    /// the loop's health over the last minute, all valid for promtool.
    @Test func fingerprintsAreBoundedAndLoopHealthIsPublished() throws {
        let metrics = AgentMetrics(fingerprintsPerTarget: 2)
        metrics.recordStall(target: "app", reason: .hang, duration: 1.5, fingerprint: "hang-a", culprit: "parse")
        metrics.recordStall(target: "app", reason: .blocked, duration: 2, fingerprint: "blocked-b", culprit: "refresh")
        metrics.recordStall(target: "app", reason: .hang, duration: 1.2, fingerprint: "hang-a", culprit: "parse")
        // A third fingerprint: the least recent (blocked-b) makes room, its count goes to other.
        metrics.recordStall(target: "app", reason: .lock, duration: 1.1, fingerprint: "lock-c", culprit: "save")
        metrics.stallOngoing(target: "db", key: "7:1", reason: .deadlock)
        metrics.update(target: "app", monitorKey: "1", stateSeconds: [.idle: 3, .running: 1], pauseSeconds: 0, capturesWithStop: 0, capturesWithoutStop: 0)
        metrics.updateLoop(target: "app", monitorKey: "1", turns: 50, evidence: .kernelCounter, turnLengths: [0.02, 1.4])
        metrics.touch()
        var text = metrics.render()
        let name = "stallagent_stall_fingerprint_total"
        #expect(text.contains(#"\#(name){target="app",fingerprint="hang-a",reason="hang",culprit="parse"} 2"#), "\(text)")
        #expect(text.contains(#"\#(name){target="app",fingerprint="lock-c",reason="lock",culprit="save"} 1"#))
        #expect(!text.contains(#"fingerprint="blocked-b""#))
        #expect(text.contains(#"\#(name){target="app",fingerprint="other",reason="other",culprit="other"} 1"#))
        #expect(text.contains(#"stallagent_stalls_ongoing{target="db",reason="deadlock"} 1"#))
        #expect(text.contains(#"stallagent_loop_busy_ratio{target="app"} 0.25"#), "\(text)")
        #expect(text.contains(#"stallagent_loop_longest_turn_seconds{target="app"} 1.4"#))
        #expect(text.contains(#"stallagent_loop_turns_per_second{target="app"}"#))
        try PromtoolCheck.check(text)
        metrics.stallFinished(target: "db", key: "7:1")
        text = metrics.render()
        #expect(text.contains(#"stallagent_stalls_ongoing{target="db",reason="deadlock"} 0"#))
    }

    @Test func loopHealthCoversTheLastMinute() {
        var window = LoopHealthWindow()
        _ = window.close(at: 0)
        window.addTurns(100)
        window.addStateSeconds(8, busy: false)
        window.addStateSeconds(2, busy: true)
        window.addTurnLengths([0.5], at: 5)
        #expect(window.close(at: 10) == .init(turnsPerSecond: 10, busyRatio: 0.2, longestTurn: 0.5))
        // Seventy seconds on, an idle minute: the old turns and the long one are forgotten.
        for second in stride(from: 20.0, through: 80, by: 10) {
            window.addStateSeconds(10, busy: false)
            _ = window.close(at: second)
        }
        let summary = window.close(at: 80)
        #expect(summary.turnsPerSecond == 0 && summary.busyRatio == 0 && summary.longestTurn == 0, "\(summary)")
    }
}

/// `promtool check metrics` from Debian's prometheus package (scripts/setup installs it).
enum PromtoolCheck {
    static func check(_ text: String) throws {
        let url = URL(fileURLWithPath: "/usr/bin/promtool")
        try #require(FileManager.default.isExecutableFile(atPath: url.path), "promtool missing: run scripts/setup")
        let process = Process()
        process.executableURL = url
        process.arguments = ["check", "metrics"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try input.fileHandleForWriting.close()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "promtool: \(said)\n\(text)")
        #expect(said.isEmpty, "promtool: \(said)")
    }
}
