/// How `stallagent --pid` watches: the knobs of docs/architecture.md, "Detection model" with their defaults.
public struct MonitorOptions: Sendable {
    // The defaults are the settings table's (`Settings`), which the command line and the config
    // file read too.
    public var probeInterval = Settings.probeInterval.defaultValue!.seconds
    public var sampleInterval = Settings.sampleInterval.defaultValue!.seconds
    public var threshold = Settings.threshold.defaultValue!.seconds
    public var launchThreshold = Settings.launchThreshold.defaultValue!.seconds
    /// Batch processes (never seen idle, e.g. a test runner): a frame held past this is a
    /// stall (`DetectorConfiguration.batchThreshold`). nil: off, start-up uses launchThreshold.
    public var batchThreshold: Double?
    /// Extra syscalls (by number) that count as the event loop's idle wait.
    public var extraIdleSyscalls: Set<Int> = []
    /// A blocked main thread whose stack has a frame matching one of these is idle
    /// (for loops that wait in something other than epoll/poll/select).
    public var idleFramePatterns: [String] = []
    /// A thread blocked in an idle-set or parking wait whose stack has a frame matching one of
    /// these is working, not idle (`--busy-frame`).
    public var busyFramePatterns: [String] = []
    /// What is the user's own code (`--app-frames`; `!GLOB` what is not): `AppFrameRule`.
    public var appFramePatterns: [String] = []
    /// Which loop-turn evidence to use (`--loop-turns`).
    public var loopTurns = Settings.loopTurns.defaultValue!
    public var reportDirectory = Settings.reportDirectory.defaultValue!
    public var quiet = Settings.quiet.defaultValue!
    /// Stop watching after this long (nil: until the target exits or a signal).
    public var duration: Double?
    /// Terminate a process stalled this long: SIGABRT, then SIGKILL after `killGrace`.
    public var killAfter: Double?
    public var killGrace = 2.0
    public var maxStackBytes = Int(Settings.maxStack.defaultValue!.bytes)
    /// Sample a running main thread with a perf_event (no ptrace stop) where the kernel allows;
    /// off, or refused, every running-thread sample is a ptrace stop. Benchmarks compare both.
    public var perfSampling = Settings.perfSampling.defaultValue!
    /// Extra directories for separate debug files (`--debug-dir`).
    public var debugDirectories: [String] = []
    public var writeFolded = true
    /// Command lines in reports go through `ArgvRedactor` unless `--keep-argv`.
    public var redactArgv = !Settings.keepArgv.defaultValue!
    /// A stall fingerprint already reported less than this long ago (wall clock, survives
    /// restarts with the fingerprint state) gets no new report; 0 turns the limit off.
    public var minimumReportInterval = Settings.minReportInterval.defaultValue!.seconds
    /// A process with no event loop that waits for a child (wait4, waitid) is parked, not
    /// blocked: set when its children are watched themselves (a unit or `--follow-children`),
    /// where the stall is in the child. A wrapped test run keeps it off, so a shell that hangs
    /// on a hung child is still reported.
    public var childWaitsAreParking = false
    /// The blocking call a process with no event loop is first found in is its parking wait
    /// (`ParkingWaitTracker`): set where helpers are watched too (a unit, `--follow-children`).
    /// A single `--pid` keeps it off: the process a user points the agent at while it is stuck
    /// in a blocking call is reported.
    public var firstWaitIsParking = false
    /// Loop-turn counters also stamp each wait's entry and exit, and a thread that keeps turning
    /// through its home wait is not probed every round (`StampedTurns`): set where a family is
    /// watched (a unit, `--follow-children`), whose busy members were most of the agent's cost.
    /// A single `--pid` keeps it off: each stamp costs the target a little more than a count
    /// (docs/architecture.md, "Wait stamps").
    public var stampsWaits = false
    /// The unit the watched process belongs to, named in its reports.
    public var unit: String?

    public init() {}
}

/// `--loop-turns`: `auto` takes the best evidence available (loop probe, kernel counter, stack
/// rule); `stack-rule` forces the fallback (to compare, or where counters are unwanted).
public enum LoopTurnMode: String, CaseIterable, Sendable {
    case auto
    case kernelCounter = "kernel-counter"
    case stackRule = "stack-rule"
}
