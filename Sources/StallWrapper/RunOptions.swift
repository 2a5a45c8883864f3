import StallMonitoring

/// `stallagent [options] -- COMMAND`: what to do with the stalls of a wrapped command.
public struct RunOptions: Sendable {
    public typealias OnStall = StallMonitoring.OnStall

    public var monitor = MonitorOptions()
    public var onStall = Settings.onStall.defaultValue!
    /// Whole-run limit: on expiry every watched process gets a snapshot report, then the
    /// command is terminated and the wrapper exits 124.
    public var timeout: Double?
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
    /// file-capability program the agent's user may not trace): nothing was watched.
    public static let notWatched: Int32 = 87
    public static let timedOut: Int32 = 124
    public static let agentError: Int32 = 125
    public static let notExecutable: Int32 = 126
    public static let notFound: Int32 = 127
}
