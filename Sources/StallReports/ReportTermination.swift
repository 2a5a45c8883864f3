/// The report's `termination` text says what `--kill-after` did: "terminated by stallagent
/// with …", or, when the signal could not be sent, "not terminated: …" with the reason. One
/// definition of the second form, for the monitor that writes it and the lines that read it.
public enum ReportTermination {
    public static let refusedPrefix = "not terminated: "

    public static func refused(_ what: String) -> String { refusedPrefix + what }

    public static func isRefusal(_ termination: String) -> Bool { termination.hasPrefix(refusedPrefix) }
}
