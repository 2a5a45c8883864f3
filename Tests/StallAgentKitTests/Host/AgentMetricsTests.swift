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
