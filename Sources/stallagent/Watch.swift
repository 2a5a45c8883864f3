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

    @Option(name: .customLong("busy-frame"), help: ArgumentHelp("Treat a thread waiting in an idle-wait or parking call whose stack has a function matching PATTERN as working, not idle (repeatable).", valueName: "pattern"))
    var busyFrames: [String] = []

    @Option(help: ArgumentHelp("What tells the agent the event loop turned, ending a busy stretch even when the thread is never seen asleep (a saturated server): 'auto' uses the LD_PRELOAD loop probe when the target has it, else per-thread kernel counters on the idle-wait syscall tracepoints (needs root or CAP_PERFMON; tracefs is mounted when missing), else the stack rule, said once on stderr and in every report. 'kernel-counter' fails when the counters are refused. 'stack-rule': a stall needs a frame outside the loop's own frames in every sample for the threshold; it cannot tell two requests served back to back through the same frame, nor work inside an interpreter's eval loop.", valueName: "auto|kernel-counter|stack-rule"))
    var loopTurns = "auto"

    @Option(help: ArgumentHelp("Where reports are written (created if missing). Default: stallagent-reports, or STATE/reports under systemd (STATE: the first StateDirectory= entry). A unit's reports go to DIR/UNIT/.", valueName: "dir"))
    var reportDir: String?

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

    @Flag(help: "Sample a running main thread with ptrace stops only. By default the kernel samples it through perf_event where permitted (root, CAP_PERFMON, or perf_event_paranoid <= 1 for one's own processes): no stop, no 't' state.")
    var noPerfSampling = false

    @Flag(help: "Keep the target's command line as it is in reports. By default values that look like secrets (--password=…, --token X, -pX, KEY=VALUE with a secret-like key, URL passwords) are replaced by <redacted>.")
    var keepArgv = false

    func monitorOptions(defaultLaunchThreshold: Double = 10) throws -> MonitorOptions {
        var options = MonitorOptions()
        options.redactArgv = !keepArgv
        options.perfSampling = !noPerfSampling
        options.threshold = try durationOption(threshold, "threshold", minimum: 0.01)
        if let launchThreshold, launchThreshold.lowercased() != "off" {
            options.launchThreshold = try durationOption(launchThreshold, "launch-threshold", minimum: 0.01)
        } else {
            options.launchThreshold = launchThreshold == nil ? defaultLaunchThreshold : .infinity
        }
        options.probeInterval = try durationOption(probeInterval, "probe-interval", minimum: 0.001)
        options.sampleInterval = try durationOption(sampleInterval, "sample-interval", minimum: 0.001)
        options.duration = try duration.map { try durationOption($0, "duration", minimum: 0.01) }
        options.killAfter = try killAfter.map { try durationOption($0, "kill-after", minimum: 0.01) }
        for name in idleSyscalls {
            guard let number = ProcSyscallInfo.number(ofSyscall: name) ?? Int(name) else {
                throw ValidationError("--idle-syscall: unknown system call '\(name)'")
            }
            options.extraIdleSyscalls.insert(number)
        }
        options.idleFramePatterns = idleFrames
        options.busyFramePatterns = busyFrames
        guard let mode = LoopTurnMode(rawValue: loopTurns) else {
            throw ValidationError("--loop-turns: '\(loopTurns)' is not one of auto, kernel-counter, stack-rule")
        }
        options.loopTurns = mode
        options.reportDirectory = reportDir ?? options.reportDirectory
        options.quiet = quiet
        // The same bounds as the config file's max-stack: a negative size crashed the agent and
        // 0 made a blocked thread take a ptrace stop.
        guard maxStack >= 4096, maxStack <= 64 << 20 else {
            throw ValidationError("--max-stack: \(maxStack) is out of range (4096 to \(64 << 20) bytes)")
        }
        options.maxStackBytes = maxStack
        options.debugDirectories = debugDirectories
        return options
    }
}

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Watch processes' main threads and report every stall (the default command).",
        discussion: """
            Probes the main thread every 10 ms from /proc (nothing runs in the target), samples \
            its stack every 50 ms while it is busy, and writes a report (text, JSON, folded \
            stacks) for every stall longer than the threshold: written when the stall is \
            detected, updated while it lasts, finalised when the thread is idle again.

            Targets: --pid watches a process until it exits (repeatable); with --follow-children \
            also every descendant it has or forks later. --unit watches a systemd unit as a whole: \
            the main thread of every process in the unit's cgroup (a forking server's master and \
            each of its workers), attaching to new processes within a probe round and letting go \
            of exited ones; each stalled process gets its own reports, named by process and pid, \
            in DIR/UNIT/. A master or supervisor that only waits for signals or for its children \
            reports nothing. --main-process-only watches the unit's main process alone. --unit \
            and --pidfile follow a service across restarts; a unit that is not running, not \
            found, or has no processes is said once per reason and looked for again every \
            --retry-interval. --config FILE watches every target listed in a YAML file (see \
            /etc/stallagent/stallagent.yaml.example).

            Under systemd (Type=notify) it sends READY=1, STATUS= and WATCHDOG=1 pings from the \
            monitor loop; when stderr is the journal, stalls are logged as structured journal \
            entries (STALLAGENT_* fields). Ends after --duration, when every --pid target has \
            exited, or on Ctrl-C / SIGTERM (open reports are finalised first).
            Examples: stallagent --pid 1234 --threshold 500ms
                      stallagent --pid "$(cat /run/nginx.pid)" --follow-children
                      stallagent --unit nginx.service --metrics-file /var/lib/prometheus/node-exporter/stallagent.prom
            """)

    @Option(help: "A process to watch until it exits; repeat it to watch several (--pid 1234 --pid 1240).")
    var pid: [Int32] = []

    @Flag(help: "With --pid: also watch every descendant of the process, those it forks later included (a forking server's workers).")
    var followChildren = false

    @Option(help: ArgumentHelp("A systemd unit to watch, every process of it, across restarts (e.g. nginx.service).", valueName: "name"))
    var unit: String?

    @Flag(help: "With --unit: watch only the unit's main process, not its workers.")
    var mainProcessOnly = false

    @Option(help: ArgumentHelp("A file holding the pid to watch; re-read when that process exits.", valueName: "file"))
    var pidfile: String?

    @Option(help: ArgumentHelp("Watch the targets listed in this YAML file; every setting then comes from the file.", valueName: "file"))
    var config: String?

    @Option(help: ArgumentHelp("The target's name in metrics, journal fields and state files.", valueName: "name"))
    var name: String?

    @OptionGroup var watch: WatchOptions

    @Option(help: ArgumentHelp("Keep per-stall fingerprint state (rate limits, annealing) here across restarts. Default: the first StateDirectory= entry under systemd, else not kept.", valueName: "dir"))
    var stateDir: String?

    @Option(help: ArgumentHelp("Write Prometheus metrics to this file atomically (node_exporter textfile collector).", valueName: "path"))
    var metricsFile: String?

    @Option(help: ArgumentHelp("Serve Prometheus metrics on HOST:PORT at /metrics.", valueName: "addr:port"))
    var metricsListen: String?

    @Option(help: ArgumentHelp("How often the metrics file is rewritten.", valueName: "duration"))
    var metricsInterval = "15s"

    @Option(help: ArgumentHelp("Keep at most this many reports in the report directory (oldest go first).", valueName: "count"))
    var maxReports: Int?

    @Option(help: ArgumentHelp("Keep the report directory under this size, e.g. 200MB.", valueName: "size"))
    var maxReportBytes: String?

    @Option(help: ArgumentHelp("Delete reports older than this, e.g. 30d.", valueName: "duration"))
    var maxReportAge: String?

    @Option(help: ArgumentHelp("A stall already reported within this interval gets no new report (kept across restarts with --state-dir).", valueName: "duration"))
    var minReportInterval: String?

    @Option(help: ArgumentHelp("How often a --unit or --pidfile target that is not running is looked for.", valueName: "duration"))
    var retryInterval = "2s"

    func run() throws {
        try runReportingErrors {
            // First: every thread the agent starts (the metrics listener) must inherit the mask.
            try StopRequest.install()
            let configuration = try agentConfiguration()
            let agent = try HostAgent(configuration: configuration, log: { FileHandleOutput.standardError($0 + "\n") })
            _ = try agent.run(duration: configuration.monitor.duration)
        }
    }

    func agentConfiguration() throws -> AgentConfiguration {
        let environment = ProcessInfo.processInfo.environment
        let systemdState = SystemdDirectories(environment: environment).stateDirectory
        let targetFlags = [pid.isEmpty ? nil : "--pid", unit.map { _ in "--unit" }, pidfile.map { _ in "--pidfile" }].compactMap { $0 }
        if let config {
            let scopeFlags = [followChildren ? "--follow-children" : nil, mainProcessOnly ? "--main-process-only" : nil].compactMap { $0 }
            guard targetFlags.isEmpty, scopeFlags.isEmpty else {
                throw ValidationError("--config lists the targets itself; drop \((targetFlags + scopeFlags).joined(separator: ", ")) (a target's 'processes: all|main' chooses what is watched)")
            }
            var configuration = try AgentConfiguration.load(path: config)
            if configuration.stateDirectory == nil { configuration.stateDirectory = stateDir ?? systemdState }
            if watch.reportDir == nil, configuration.monitor.reportDirectory == MonitorOptions().reportDirectory,
               let state = systemdState
            {
                configuration.monitor.reportDirectory = state + "/reports"
            }
            configuration.monitor.duration = try watch.monitorOptions().duration
            return configuration
        }
        guard targetFlags.count == 1 else {
            throw ValidationError(targetFlags.isEmpty
                ? "nothing to watch: give --pid PID, --unit NAME, --pidfile FILE or --config FILE"
                : "give one of \(targetFlags.joined(separator: ", ")) (several targets need --config)")
        }
        if followChildren, pid.isEmpty {
            throw ValidationError("--follow-children goes with --pid (a --unit is watched as a whole already)")
        }
        if mainProcessOnly, unit == nil {
            throw ValidationError("--main-process-only goes with --unit")
        }
        var configuration = AgentConfiguration()
        configuration.monitor = try watch.monitorOptions()
        if watch.reportDir == nil, let state = systemdState {
            configuration.monitor.reportDirectory = state + "/reports"
        }
        if let minReportInterval { configuration.monitor.minimumReportInterval = try durationOption(minReportInterval, "min-report-interval") }
        if !pid.isEmpty {
            var seen = Set<Int32>()
            let pids = pid.filter { seen.insert($0).inserted }
            if pids.count > 1, name != nil {
                throw ValidationError("--name names one target; several --pid targets are named by their processes (or use --config)")
            }
            configuration.targets = pids.map {
                var target = TargetSpec(selector: .pid($0), name: name)
                target.processes = followChildren ? .all : nil
                return target
            }
        } else if let unit {
            guard TargetSpec.isValidUnitName(unit) else { throw ValidationError("--unit: '\(unit)' is not a unit name (e.g. nginx.service)") }
            var target = TargetSpec(selector: .unit(TargetSpec.normalizedUnitName(unit)), name: name)
            target.processes = mainProcessOnly ? .main : nil
            configuration.targets = [target]
        } else {
            configuration.targets = [TargetSpec(selector: .pidfile(pidfile!), name: name)]
        }
        configuration.stateDirectory = stateDir ?? systemdState
        configuration.metricsFile = metricsFile
        configuration.metricsListen = metricsListen
        configuration.metricsInterval = try durationOption(metricsInterval, "metrics-interval", minimum: 0.1)
        if let maxReports {
            guard maxReports > 0 else { throw ValidationError("--max-reports must be at least 1") }
            configuration.retention.maxReports = maxReports
        }
        if let maxReportBytes {
            guard let bytes = ByteSizeParser.parse(maxReportBytes), bytes > 0 else {
                throw ValidationError("--max-report-bytes: '\(maxReportBytes)' is not a size (examples: 500MB, 2GiB)")
            }
            configuration.retention.maxBytes = bytes
        }
        configuration.retryInterval = try durationOption(retryInterval, "retry-interval", minimum: 0.05)
        if let maxReportAge { configuration.retention.maxAge = try durationOption(maxReportAge, "max-report-age", minimum: 1, maximum: 100 * 366 * 86400) }
        return configuration
    }
}

/// Runs a monitor as `watch` and `demo` do: a first line naming the report directory, the
/// per-stall lines while it runs, the exit summary at the end.
@discardableResult
func watchAndSummarize(_ monitor: StallMonitor) -> MonitorSummary {
    FileHandleOutput.standardError(
        "stallagent: watching \(monitor.inspector.name.terminalSafe) [\(monitor.inspector.pid)]'s main thread; reports → \(monitor.summary.reportDirectory)\n")
    let summary = monitor.run()
    FileHandleOutput.standardError(summary.render() + "\n")
    return summary
}
