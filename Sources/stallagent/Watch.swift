import ArgumentParser
import Foundation
import StallProc
import StallMonitoring
import StallHost

/// Options shared by `watch` and `run`, declared from the settings table (`Settings`), each
/// property named after its flag (`CommandLineSettings`). Values that take a number are read
/// unconditionally, so that `--threshold -1s` is refused for being negative rather than for a
/// missing value.
struct WatchOptions: ParsableArguments {
    @Option(name: Settings.threshold.longName, parsing: .unconditional, help: Settings.threshold.argumentHelp)
    var threshold: SettingArgument<TimeSpan>?

    @Option(name: Settings.launchThreshold.longName, parsing: .unconditional, help: Settings.launchThreshold.plainArgumentHelp)
    var launchThreshold: SettingArgument<TimeSpan>?

    @Option(name: Settings.probeInterval.longName, parsing: .unconditional, help: Settings.probeInterval.argumentHelp)
    var probeInterval: SettingArgument<TimeSpan>?

    @Option(name: Settings.sampleInterval.longName, parsing: .unconditional, help: Settings.sampleInterval.argumentHelp)
    var sampleInterval: SettingArgument<TimeSpan>?

    @Option(name: Settings.idleSyscalls.longName, help: Settings.idleSyscalls.argumentHelp)
    var idleSyscall: [SettingArgument<SystemCall>] = []

    @Option(name: Settings.idleFrames.longName, help: Settings.idleFrames.argumentHelp)
    var idleFrame: [String] = []

    @Option(name: Settings.busyFrames.longName, help: Settings.busyFrames.argumentHelp)
    var busyFrame: [String] = []

    @Option(name: Settings.appFrames.longName, help: Settings.appFrames.argumentHelp)
    var appFrames: [String] = []

    @Option(name: Settings.loopTurns.longName, help: Settings.loopTurns.argumentHelp)
    var loopTurns: SettingArgument<LoopTurnMode>?

    @Option(name: Settings.reportDirectory.longName, help: Settings.reportDirectory.plainArgumentHelp)
    var reportDir: String?

    @Flag(name: Settings.quiet.longName, help: Settings.quiet.flagHelp)
    var quiet = false

    @Option(name: Settings.duration.longName, parsing: .unconditional, help: Settings.duration.argumentHelp)
    var duration: SettingArgument<TimeSpan>?

    @Option(name: Settings.killAfter.longName, parsing: .unconditional, help: Settings.killAfter.argumentHelp)
    var killAfter: SettingArgument<TimeSpan>?

    @Option(name: Settings.maxStack.longName, parsing: .unconditional, help: Settings.maxStack.argumentHelp)
    var maxStack: SettingArgument<ByteSize>?

    @Option(name: Settings.debugDirectories.longName, help: Settings.debugDirectories.argumentHelp)
    var debugDir: [String] = []

    @Flag(name: Settings.perfSampling.longName, help: Settings.perfSampling.flagHelp)
    var noPerfSampling = false

    @Flag(name: Settings.keepArgv.longName, help: Settings.keepArgv.flagHelp)
    var keepArgv = false

    /// Refused before the command runs, with the subcommand's usage.
    func validate() throws {
        _ = try monitorOptions()
    }

    /// The watch options these flags give over the defaults (`top`; `watch` and `run` read
    /// them with their own settings).
    func monitorOptions() throws -> MonitorOptions {
        try MonitorOptions.settingBindings.monitorOptions(CommandLineSettings.given(in: self))
    }
}

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
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

    @Option(
        help: ArgumentHelp(
            "Watch the targets listed in this YAML file; settings given on the command line go over the file's (--print-config shows the result).",
            valueName: "file"))
    var config: String?

    @Option(help: ArgumentHelp("The target's name in metrics, journal fields and state files.", valueName: "name"))
    var name: String?

    @OptionGroup var watch: WatchOptions

    @Option(name: Settings.stateDirectory.longName, help: Settings.stateDirectory.argumentHelp)
    var stateDir: String?

    @Option(name: Settings.metricsFile.longName, help: Settings.metricsFile.argumentHelp)
    var metricsFile: String?

    @Option(name: Settings.metricsListen.longName, help: Settings.metricsListen.argumentHelp)
    var metricsListen: String?

    @Option(name: Settings.metricsInterval.longName, parsing: .unconditional, help: Settings.metricsInterval.argumentHelp)
    var metricsInterval: SettingArgument<TimeSpan>?

    @Option(name: Settings.metricsFingerprints.longName, parsing: .unconditional, help: Settings.metricsFingerprints.argumentHelp)
    var metricsFingerprints: SettingArgument<Int>?

    @Option(name: Settings.maxReports.longName, parsing: .unconditional, help: Settings.maxReports.argumentHelp)
    var maxReports: SettingArgument<Int>?

    @Option(name: Settings.maxReportBytes.longName, parsing: .unconditional, help: Settings.maxReportBytes.argumentHelp)
    var maxReportBytes: SettingArgument<ByteSize>?

    @Option(name: Settings.maxReportAge.longName, parsing: .unconditional, help: Settings.maxReportAge.argumentHelp)
    var maxReportAge: SettingArgument<TimeSpan>?

    @Option(name: Settings.minReportInterval.longName, parsing: .unconditional, help: Settings.minReportInterval.argumentHelp)
    var minReportInterval: SettingArgument<TimeSpan>?

    @Option(name: Settings.retryInterval.longName, parsing: .unconditional, help: Settings.retryInterval.argumentHelp)
    var retryInterval: SettingArgument<TimeSpan>?

    @Flag(help: "Print the settings this command line (and --config FILE) resolves to, as a config file would hold them, and exit.")
    var printConfig = false

    /// Refused before anything starts, with this command's usage (`agentConfiguration()` reads them again).
    func validate() throws {
        var scratch = AgentConfiguration()
        do throws(SettingProblem) {
            try AgentConfiguration.settingBindings.apply(commandLine: CommandLineSettings.given(in: self), to: &scratch)
        } catch {
            throw ValidationError(error.description)
        }
    }

    func run() throws {
        try runReportingErrors {
            let configuration = try agentConfiguration()
            if printConfig {
                FileHandleOutput.standardOutput(configuration.settingsText())
                return
            }
            // Before any thread starts: every thread the agent starts (the metrics listener) must inherit the mask.
            try StopRequest.install()
            let agent = try HostAgent(configuration: configuration, log: { FileHandleOutput.standardError($0 + "\n") })
            _ = try agent.run(duration: configuration.monitor.duration)
        }
    }

    func agentConfiguration() throws -> AgentConfiguration {
        let given = CommandLineSettings.given(in: self)
        let targetFlags = [pid.isEmpty ? nil : "--pid", unit.map { _ in "--unit" }, pidfile.map { _ in "--pidfile" }].compactMap { $0 }
        if config != nil {
            let scopeFlags = [followChildren ? "--follow-children" : nil, mainProcessOnly ? "--main-process-only" : nil].compactMap { $0 }
            guard targetFlags.isEmpty, scopeFlags.isEmpty else {
                throw ValidationError(
                    "--config lists the targets itself; drop \((targetFlags + scopeFlags).joined(separator: ", ")) (a target's 'processes: all|main' chooses what is watched)"
                )
            }
        } else {
            guard targetFlags.count == 1 || printConfig else {
                throw ValidationError(
                    targetFlags.isEmpty
                        ? "nothing to watch: give --pid PID, --unit NAME, --pidfile FILE or --config FILE"
                        : "give one of \(targetFlags.joined(separator: ", ")) (several targets need --config)")
            }
            if followChildren, pid.isEmpty {
                throw ValidationError("--follow-children goes with --pid (a --unit is watched as a whole already)")
            }
            if mainProcessOnly, unit == nil {
                throw ValidationError("--main-process-only goes with --unit")
            }
        }
        var configuration: AgentConfiguration
        do {
            configuration = try AgentConfiguration.resolve(
                configFile: config, commandLine: given, environment: ProcessInfo.processInfo.environment)
        } catch let problem as SettingProblem {
            throw ValidationError(problem.description)
        }
        guard config == nil else { return configuration }
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
        } else if let pidfile {
            configuration.targets = [TargetSpec(selector: .pidfile(pidfile), name: name)]
        }
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
