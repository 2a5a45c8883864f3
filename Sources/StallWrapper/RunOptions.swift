import StallMonitoring

/// `stallagent [options] -- COMMAND`: what to do with the stalls of a wrapped command.
public struct RunOptions: Sendable {
    public var monitor = MonitorOptions()
    public var onStall = Settings.onStall.defaultValue!
    /// Whole-run limit: on expiry every watched process gets a snapshot report, then the
    /// command is terminated and the wrapper exits 124.
    public var timeout: Double?
    /// `--batch-threshold` as given: nil follows the threshold, infinity is off. What the
    /// monitor uses is `monitor.batchThreshold`, set from it by `init(commandLine:)`.
    public var batchThreshold: Double?
    public var terminateGrace = 2.0
    /// Watch only processes whose name contains one of these (the command itself always).
    public var follow: [String] = []
    /// libstallprobe.so to preload into the command (`--loop-probe`).
    public var loopProbeLibrary: String?
    /// How often descendants are looked for.
    public var discoveryInterval = 0.25

    public init() {
        // A test runner is busy by design and may never wait in an event loop: only processes
        // seen idle at least once (servers, loops) can stall, unless asked otherwise.
        monitor.launchThreshold = .infinity
        monitor.quiet = false
    }
}

/// Exit statuses of the wrapper, following timeout(1) and the shell.
public enum RunExitCode {
    /// Stalls were found and `--on-stall fail` was given (the command itself succeeded).
    public static let stallsFound: Int32 = 86
    /// The command succeeded but its own process could not be watched (a setuid or
    /// file-capability program the agent's user may not trace, or a Go program): nothing was
    /// watched.
    public static let notWatched: Int32 = 87
    public static let timedOut: Int32 = 124
    public static let agentError: Int32 = 125
    public static let notExecutable: Int32 = 126
    public static let notFound: Int32 = 127
}

extension RunOptions {
    /// Where each setting of a wrapped run goes: the watch settings, then the wrapper's own.
    public static let settingBindings: [SettingBinding<RunOptions>] =
        MonitorOptions.settingBindings.map { $0.lifted(\.monitor) } + [
            .value(Settings.onStall, get: \.onStall, set: { $0.onStall = $1 }),
            .value(Settings.timeout, get: { $0.timeout.map(TimeSpan.seconds) }, set: { $0.timeout = $1.seconds }),
            .value(
                Settings.batchThreshold, get: { $0.batchThreshold.map(TimeSpan.seconds) },
                set: { $0.batchThreshold = $1.seconds }),
        ]

    /// The options of a run from what its command line gave (texts by flag): the defaults of
    /// a wrapped command (no launch threshold), then each setting given.
    public init(commandLine: [String: [String]]) throws(SettingProblem) {
        self.init()
        try Self.settingBindings.apply(commandLine: commandLine, to: &self)
        // Not given: the threshold; off is "never", which the monitor spells nil.
        let batch = batchThreshold ?? monitor.threshold
        monitor.batchThreshold = batch.isFinite ? batch : nil
    }
}
