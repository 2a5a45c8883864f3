/// Every setting of the agent, each defined once: parsing, default, bounds, help, flag and
/// config key. Where each value goes is its binding (`MonitorOptions.settingBindings`, the
/// host's and the wrapper's); `stallagent watch`/`run` declare their options from these entries
/// and the config file loader reads its keys through them, so a default, a bound or a message
/// cannot differ between the two.
public enum Settings {
    /// Deadlines and timespecs are computed from durations: larger values overflow them.
    public static let longestDuration = TimeSpan.days(366)
    /// Large enough for any stall that can happen; 10 ms is below one probe's jitter.
    public static let shortestThreshold = TimeSpan.milliseconds(10)

    // MARK: Detection

    public static let threshold = Setting<TimeSpan>(
        flag: "threshold", configKey: "threshold", valueName: "duration",
        help: "Stall threshold: a busy main thread this long is a stall.",
        default: .seconds(1), range: shortestThreshold...longestDuration)

    /// The default is for a watched process; a wrapped command's is off (`RunOptions`).
    public static let launchThreshold = Setting<TimeSpan>(
        flag: "launch-threshold", configKey: "launch-threshold", valueName: "duration",
        help:
            "Threshold before the process is first seen idle (start-up); 'off' never reports a process that has not yet idled. Default: 10s for --pid, off for wrapped commands.",
        default: .seconds(10), off: .forever, range: shortestThreshold...longestDuration)

    public static let probeInterval = Setting<TimeSpan>(
        flag: "probe-interval", configKey: "probe-interval", valueName: "duration",
        help: "How often /proc is probed (jittered ±20 %).",
        default: .milliseconds(10), range: .milliseconds(1)...longestDuration)

    public static let sampleInterval = Setting<TimeSpan>(
        flag: "sample-interval", configKey: "sample-interval", valueName: "duration",
        help: "How often the stack is sampled while the thread is busy.",
        default: .milliseconds(50), range: .milliseconds(1)...longestDuration)

    public static let idleSyscalls = Setting<SystemCall>(
        flag: "idle-syscall", configKey: "idle-syscalls", valueName: "name",
        help: "Also treat this syscall as the loop's idle wait (repeatable), e.g. read, futex.")

    public static let idleFrames = Setting<String>(
        flag: "idle-frame", configKey: "idle-frames", valueName: "pattern",
        help: "Treat a blocked thread whose stack has a function matching PATTERN (glob or substring) as idle (repeatable).")

    public static let busyFrames = Setting<String>(
        flag: "busy-frame", configKey: "busy-frames", valueName: "pattern",
        help: "Treat a thread waiting in an idle-wait or parking call whose stack has a function matching PATTERN as working, not idle (repeatable).")

    public static let appFrames = Setting<String>(
        flag: "app-frames", configKey: "app-frames", valueName: "glob",
        help:
            "Frames matching GLOB (module name or path, source file or function) are your own code, which the culprit names; '!GLOB' marks code that is not (repeatable, the last match wins). By default the executable, Python files outside the standard library and site-packages, and JIT code outside node: modules are."
    )

    public static let loopTurns = Setting<LoopTurnMode>(
        flag: "loop-turns", configKey: "loop-turns", valueName: "auto|kernel-counter|stack-rule",
        help:
            "What tells the agent the event loop turned, ending a busy stretch even when the thread is never seen asleep (a saturated server): 'auto' uses the LD_PRELOAD loop probe when the target has it, else per-thread kernel counters on the idle-wait syscall tracepoints, opened once the loop is first seen idle or half a threshold into a busy stretch (they slow every system call of the thread; needs root or CAP_PERFMON; tracefs is mounted when missing), else the stack rule, said once on stderr and in every report. 'kernel-counter' fails when the counters are refused. 'stack-rule': a stall needs a frame outside the loop's own frames in every sample for the threshold; it cannot tell two requests served back to back through the same frame, nor work inside an interpreter's eval loop.",
        default: .auto)

    // MARK: Capture

    /// 0 made a blocked thread take a ptrace stop and a negative size crashed the agent.
    public static let maxStack = Setting<ByteSize>(
        flag: "max-stack", configKey: "max-stack", valueName: "size",
        help: "Most stack bytes copied per thread and sample, e.g. 64KiB, 2MiB.",
        default: .kibibytes(512), range: .kibibytes(4)...(.mebibytes(64)))

    /// The command line spells it `--no-perf-sampling`, as it only ever turns it off.
    public static let perfSampling = Setting<Bool>(
        flag: "no-perf-sampling", configKey: "perf-sampling", valueName: "bool",
        help:
            "Sample a running main thread with ptrace stops only. By default the kernel samples it through perf_event where permitted (root, CAP_PERFMON, or perf_event_paranoid <= 1 for one's own processes): no stop, no 't' state.",
        default: true)

    public static let debugDirectories = Setting<String>(
        flag: "debug-dir", configKey: "debug-dirs", valueName: "dir",
        help: "Also look for separate debug files here (DIR/.build-id/xx/rest.debug, debuglink names), before the target's /usr/lib/debug (repeatable).")

    // MARK: Reports and actions

    public static let reportDirectory = Setting<String>(
        flag: "report-dir", configKey: "report-dir", valueName: "dir",
        help:
            "Where reports are written (created if missing). Default: stallagent-reports, or STATE/reports under systemd (STATE: the first StateDirectory= entry). A unit's reports go to DIR/UNIT/.",
        default: "stallagent-reports")

    public static let quiet = Setting<Bool>(
        flag: "quiet", configKey: "quiet", valueName: "bool",
        help: "No per-stall lines on stderr; only the exit summary.",
        default: false)

    public static let keepArgv = Setting<Bool>(
        flag: "keep-argv", configKey: "keep-argv", valueName: "bool",
        help:
            "Keep the target's command line as it is in reports. By default values that look like secrets (--password=…, --token X, -pX, KEY=VALUE with a secret-like key, URL passwords) are replaced by <redacted>.",
        default: false)

    public static let killAfter = Setting<TimeSpan>(
        flag: "kill-after", configKey: "kill-after", valueName: "duration",
        help: "Terminate a process stalled this long (SIGABRT, then SIGKILL after 2 s); the report says so.",
        range: shortestThreshold...longestDuration)

    public static let minReportInterval = Setting<TimeSpan>(
        flag: "min-report-interval", configKey: "min-report-interval", valueName: "duration",
        help: "A stall already reported within this interval gets no new report (kept across restarts with --state-dir).",
        default: .seconds(0), range: .seconds(0)...longestDuration)

    /// Only the command line: a service runs until it is stopped.
    public static let duration = Setting<TimeSpan>(
        flag: "duration", configKey: nil, valueName: "duration",
        help: "Stop watching after this long.",
        range: shortestThreshold...longestDuration)

    /// The watch settings, for the tests that hold the command line and the config file to the
    /// table; the host's (`Settings.host`) and the wrapper's (`Settings.wrapper`) live with them.
    public static let watch: [any AnySetting] = MonitorOptions.settingBindings.map(\.setting)
}

/// A setting whatever its value type.
public protocol AnySetting: Sendable {
    /// Its flag, else its config key: how messages and tables name it.
    var name: String { get }
    var flag: String? { get }
    var configKey: String? { get }
    var valueName: String { get }
    var help: String { get }
    var defaultText: String? { get }
    var rangeDescription: String? { get }
    /// The message for `text`, nil when it is a valid value.
    func problem(with text: String) -> SettingProblem?
}

extension Setting: AnySetting {
    public var defaultText: String? { defaultValue?.settingText }

    public func problem(with text: String) -> SettingProblem? {
        do throws(SettingProblem) {
            _ = try parse(text)
            return nil
        } catch {
            return error
        }
    }
}
