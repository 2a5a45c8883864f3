/// `--on-stall`: what a wrapped run does with the stalls it found. Declared beside the settings
/// table, which the wrapper (`RunOptions.OnStall`) and the config file both read it through.
public enum OnStall: String, Sendable, CaseIterable { case report, fail }
