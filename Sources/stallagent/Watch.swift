import ArgumentParser
import Foundation
import StallAgentKit

/// Options shared by `watch` and `demo`.
struct WatchOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Stall threshold: a busy main thread this long is a stall.", valueName: "duration"))
    var threshold = "1s"

    @Option(help: ArgumentHelp("Threshold before the process is first seen idle (start-up); 'off' never reports a process that has not yet idled. Default: 10s for --pid, off for wrapped commands.", valueName: "duration"))
    var launchThreshold: String?

    @Option(help: ArgumentHelp("How often /proc is probed (jittered ±20 %).", valueName: "duration"))
    var probeInterval = "10ms"

    @Option(help: ArgumentHelp("How often the stack is sampled while the thread is busy.", valueName: "duration"))
    var sampleInterval = "50ms"

    @Option(name: .customLong("idle-syscall"), help: ArgumentHelp("Also treat this syscall as the loop's idle wait (repeatable), e.g. read, futex.", valueName: "name"))
    var idleSyscalls: [String] = []

    @Option(name: .customLong("idle-frame"), help: ArgumentHelp("Treat a blocked thread whose stack has a function matching PATTERN (glob or substring) as idle (repeatable).", valueName: "pattern"))
    var idleFrames: [String] = []

    @Option(help: ArgumentHelp("Where reports are written (created if missing).", valueName: "dir"))
    var reportDir = "stallagent-reports"

    @Flag(help: "No per-stall lines on stderr; only the exit summary.")
    var quiet = false

    @Option(help: ArgumentHelp("Stop watching after this long.", valueName: "duration"))
    var duration: String?

    @Option(help: ArgumentHelp("Terminate a process stalled this long (SIGABRT, then SIGKILL after 2 s); the report says so.", valueName: "duration"))
    var killAfter: String?

    @Option(help: ArgumentHelp("Most stack bytes copied per sample.", valueName: "bytes"))
    var maxStack = 512 * 1024

    @Option(name: .customLong("debug-dir"), help: ArgumentHelp("Also look for separate debug files here (DIR/.build-id/xx/rest.debug, debuglink names), before the target's /usr/lib/debug (repeatable).", valueName: "dir"))
    var debugDirectories: [String] = []

    func monitorOptions(defaultLaunchThreshold: Double = 10) throws -> MonitorOptions {
        func parse(_ text: String, _ name: String, minimum: Double = 0) throws -> Double {
            guard let value = DurationParser.parse(text), value >= minimum else {
                throw ValidationError("--\(name): '\(text)' is not a duration (examples: 1.5s, 250ms, 2m)")
            }
            return value
        }
        var options = MonitorOptions()
        options.threshold = try parse(threshold, "threshold", minimum: 0.01)
        if let launchThreshold, launchThreshold.lowercased() != "off" {
            options.launchThreshold = try parse(launchThreshold, "launch-threshold", minimum: 0.01)
        } else {
            options.launchThreshold = launchThreshold == nil ? defaultLaunchThreshold : .infinity
        }
        options.probeInterval = try parse(probeInterval, "probe-interval", minimum: 0.001)
        options.sampleInterval = try parse(sampleInterval, "sample-interval", minimum: 0.001)
        options.duration = try duration.map { try parse($0, "duration", minimum: 0.01) }
        options.killAfter = try killAfter.map { try parse($0, "kill-after", minimum: 0.01) }
        for name in idleSyscalls {
            guard let number = ProcSyscallInfo.number(ofSyscall: name) ?? Int(name) else {
                throw ValidationError("--idle-syscall: unknown system call '\(name)'")
            }
            options.extraIdleSyscalls.insert(number)
        }
        options.idleFramePatterns = idleFrames
        options.reportDirectory = reportDir
        options.quiet = quiet
        options.maxStackBytes = maxStack
        options.debugDirectories = debugDirectories
        return options
    }
}

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Watch a running process's main thread and report every stall (the default command).",
        discussion: """
            Probes the main thread every 10 ms from /proc (nothing runs in the target), samples \
            its stack every 50 ms while it is busy, and writes a report (text, JSON, folded \
            stacks) for every stall longer than the threshold: written when the stall is \
            detected, updated while it lasts, finalised when the thread is idle again. Ends \
            when the process exits, after --duration, or on Ctrl-C / SIGTERM (open reports are \
            finalised first). Example: stallagent --pid 1234 --threshold 500ms
            """)

    @Option(help: "The process to watch.")
    var pid: Int32

    @OptionGroup var watch: WatchOptions

    func run() throws {
        try runReportingErrors {
            let options = try watch.monitorOptions()
            StopRequest.install()
            let monitor = try StallMonitor(pid: pid, options: options, log: { FileHandleOutput.standardError($0 + "\n") })
            watchAndSummarize(monitor)
        }
    }
}

/// Runs a monitor as `watch` and `demo` do: a first line naming the report directory, the
/// per-stall lines while it runs, the exit summary at the end.
@discardableResult
func watchAndSummarize(_ monitor: StallMonitor) -> MonitorSummary {
    FileHandleOutput.standardError(
        "stallagent: watching \(monitor.inspector.name) [\(monitor.inspector.pid)]'s main thread; reports → \(monitor.summary.reportDirectory)\n")
    let summary = monitor.run()
    FileHandleOutput.standardError(summary.render() + "\n")
    return summary
}
