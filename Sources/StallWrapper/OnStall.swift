import StallMonitoring

/// `--on-stall`: what a wrapped run does with the stalls it found (the command line only).
public enum OnStall: String, Sendable, CaseIterable, SettingValue { case report, fail }
