extension MonitorOptions {
    /// Where each watch setting of the table goes; `watch`, `run`, the config file and a
    /// target's overrides all set options through these.
    public static let settingBindings: [SettingBinding<MonitorOptions>] = [
        .value(Settings.threshold, get: { .seconds($0.threshold) }, set: { $0.threshold = $1.seconds }),
        .value(Settings.launchThreshold, get: { .seconds($0.launchThreshold) }, set: { $0.launchThreshold = $1.seconds }),
        .value(Settings.probeInterval, get: { .seconds($0.probeInterval) }, set: { $0.probeInterval = $1.seconds }),
        .value(Settings.sampleInterval, get: { .seconds($0.sampleInterval) }, set: { $0.sampleInterval = $1.seconds }),
        .list(
            Settings.idleSyscalls, get: { $0.extraIdleSyscalls.sorted().map(SystemCall.init(number:)) },
            add: { $0.extraIdleSyscalls.formUnion($1.map(\.number)) }),
        .list(Settings.idleFrames, get: \.idleFramePatterns, add: { $0.idleFramePatterns += $1 }),
        .list(Settings.busyFrames, get: \.busyFramePatterns, add: { $0.busyFramePatterns += $1 }),
        .list(Settings.appFrames, get: \.appFramePatterns, add: { $0.appFramePatterns += $1 }),
        .value(Settings.loopTurns, get: \.loopTurns, set: { $0.loopTurns = $1 }),
        .value(Settings.maxStack, get: { ByteSize(bytes: Int64($0.maxStackBytes)) }, set: { $0.maxStackBytes = Int($1.bytes) }),
        .value(Settings.perfSampling, get: \.perfSampling, set: { $0.perfSampling = $1 }),
        .list(Settings.debugDirectories, get: \.debugDirectories, add: { $0.debugDirectories += $1 }),
        .value(Settings.reportDirectory, get: \.reportDirectory, set: { $0.reportDirectory = $1 }),
        .value(Settings.quiet, get: \.quiet, set: { $0.quiet = $1 }),
        .value(Settings.keepArgv, get: { !$0.redactArgv }, set: { $0.redactArgv = !$1 }),
        .value(Settings.killAfter, get: { $0.killAfter.map(TimeSpan.seconds) }, set: { $0.killAfter = $1.seconds }),
        .value(
            Settings.minReportInterval, get: { .seconds($0.minimumReportInterval) },
            set: { $0.minimumReportInterval = $1.seconds }),
        .value(Settings.duration, get: { $0.duration.map(TimeSpan.seconds) }, set: { $0.duration = $1.seconds }),
    ]
}
