/// Every setting of the agent, each defined once. `stallagent watch`/`run` declare their
/// options from these entries and the config file loader reads its keys through them, so a
/// default, a bound or a message cannot differ between the two.
public enum Settings {
    /// Deadlines and timespecs are computed from durations: larger values overflow them.
    public static let longestDuration = TimeSpan.days(366)
    /// Large enough for any stall that can happen; 10 ms is below one probe's jitter.
    static let shortestThreshold = TimeSpan.milliseconds(10)

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

    // MARK: Host agent

    public static let stateDirectory = Setting<String>(
        flag: "state-dir", configKey: "state-dir", valueName: "dir",
        help:
            "Keep per-stall fingerprint state (rate limits, annealing) here across restarts. Default: the first StateDirectory= entry under systemd, else not kept."
    )

    public static let metricsFile = Setting<String>(
        flag: "metrics-file", configKey: "metrics-file", valueName: "path",
        help: "Write Prometheus metrics to this file atomically (node_exporter textfile collector).")

    public static let metricsListen = Setting<String>(
        flag: "metrics-listen", configKey: "metrics-listen", valueName: "addr:port",
        help: "Serve Prometheus metrics on HOST:PORT at /metrics.")

    public static let metricsInterval = Setting<TimeSpan>(
        flag: "metrics-interval", configKey: "metrics-interval", valueName: "duration",
        help: "How often the metrics file is rewritten.",
        default: .seconds(15), range: .milliseconds(100)...longestDuration)

    public static let metricsFingerprints = Setting<Int>(
        flag: "metrics-fingerprints", configKey: "metrics-fingerprints", valueName: "count",
        help:
            "Fingerprints per target with a series of their own in stallagent_stall_fingerprint_total; the least recent beyond it are counted as fingerprint=\"other\".",
        default: 20, range: 1...1000)

    /// The command line allowed 50 ms, the config file 100 ms: the lower bound won, so that no
    /// value that worked before is refused now.
    public static let retryInterval = Setting<TimeSpan>(
        flag: "retry-interval", configKey: "retry-interval", valueName: "duration",
        help: "How often a --unit or --pidfile target that is not running is looked for.",
        default: .seconds(2), range: .milliseconds(50)...longestDuration)

    /// In the config file under `retention:`.
    public static let maxReports = Setting<Int>(
        flag: "max-reports", configKey: "max-reports", valueName: "count",
        help: "Keep at most this many reports in the report directory (oldest go first).")

    /// In the config file under `retention:`.
    public static let maxReportBytes = Setting<ByteSize>(
        flag: "max-report-bytes", configKey: "max-bytes", valueName: "size",
        help: "Keep the report directory under this size, e.g. 200MB.",
        range: ByteSize(bytes: 1)...(.exbibytes(4)))

    /// In the config file under `retention:`. Compared with file ages only, never turned into a
    /// deadline: the command line's 100 years won over the config file's 366 days.
    public static let maxReportAge = Setting<TimeSpan>(
        flag: "max-report-age", configKey: "max-age", valueName: "duration",
        help: "Delete reports older than this, e.g. 30d.",
        range: .seconds(1)...(.days(36600)))

    // MARK: Wrapped commands (the command line only)

    public static let onStall = Setting<OnStall>(
        flag: "on-stall", configKey: nil, valueName: "report|fail",
        help: "report: write reports only; fail: also exit 86 if the command succeeded but stalled.",
        default: .report)

    public static let timeout = Setting<TimeSpan>(
        flag: "timeout", configKey: nil, valueName: "duration",
        help: "Limit for the whole run: snapshot every watched process (0xbaaaaaad reports), then terminate the command (exit 124).",
        range: .milliseconds(1)...longestDuration)

    public static let batchThreshold = Setting<TimeSpan>(
        flag: "batch-threshold", configKey: nil, valueName: "duration|off",
        help:
            "Stall threshold for batch processes (never seen idle, e.g. a test runner): a frame held this long is a stall. 'off' watches them like --pid does at start-up (--launch-threshold). Default: --threshold.",
        off: .forever, range: shortestThreshold...longestDuration)

    /// Every setting, for the tests that hold the command line and the config file to the table.
    public static let all: [any AnySetting] = [
        threshold, launchThreshold, probeInterval, sampleInterval, idleSyscalls, idleFrames, busyFrames, appFrames, loopTurns,
        maxStack, perfSampling, debugDirectories, reportDirectory, quiet, keepArgv, killAfter, minReportInterval,
        duration, stateDirectory, metricsFile, metricsListen, metricsInterval, metricsFingerprints, retryInterval, maxReports,
        maxReportBytes, maxReportAge, onStall, timeout, batchThreshold,
    ]
}

/// A setting whatever its value type.
public protocol AnySetting: Sendable {
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
