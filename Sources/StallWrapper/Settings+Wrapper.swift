import StallMonitoring

/// The settings of a wrapped command (`stallagent -- COMMAND`): the command line only.
extension Settings {
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
}

extension Settings {
    /// The wrapper's own settings, for the tests that walk the table.
    public static let wrapper: [any AnySetting] = [onStall, timeout, batchThreshold]
}
