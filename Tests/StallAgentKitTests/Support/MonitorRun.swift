import Foundation

@testable import StallMonitoring

/// One step of a fixture's own log (`stall-fixtures loop --log FILE`, one JSON object a line):
/// what it did and when, on CLOCK_MONOTONIC, the clock the agent uses. The timing tests'
/// oracle.
struct FixtureStep: Decodable {
    var kind: String
    var start_mono: Double
    var end_mono: Double
    var seconds: Double

    static func read(_ path: String) throws -> [FixtureStep] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
            try JSONDecoder().decode(FixtureStep.self, from: Data($0.utf8))
        }
    }
}

/// A fresh path under the temporary directory (not created).
func temporaryPath(_ prefix: String = "stallagent-test") -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
}

/// Watches `pid` in this process as `stallagent --pid` would, quietly, into a fresh report
/// directory the caller removes: `configure` sets options, `beforeRun` sees the monitor
/// before its first probe.
func watchMonitor(
    pid: Int32, duration: Double?, configure: (inout MonitorOptions) -> Void = { _ in },
    beforeRun: (StallMonitor) -> Void = { _ in }
) throws -> (monitor: StallMonitor, summary: MonitorSummary, reportDirectory: String) {
    var options = MonitorOptions()
    options.reportDirectory = temporaryPath()
    options.duration = duration
    options.quiet = true
    configure(&options)
    let monitor = try StallMonitor(pid: pid, options: options, log: { _ in })
    beforeRun(monitor)
    return (monitor, monitor.run(), options.reportDirectory)
}
