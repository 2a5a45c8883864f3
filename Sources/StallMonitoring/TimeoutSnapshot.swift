/// A process captured when `--timeout` expired: where its main thread was.
public struct TimeoutSnapshot: Sendable {
    public var pid: Int32
    public var name: String
    /// The text report; nil if it could not be written.
    public var reportPath: String?
    /// The innermost frame outside system libraries (the report's culprit frame).
    public var topFunction: String
    /// What the main thread was doing: running, idle, blocked in a call …
    public var activity: String

    public init(pid: Int32, name: String, reportPath: String?, topFunction: String, activity: String) {
        self.pid = pid
        self.name = name
        self.reportPath = reportPath
        self.topFunction = topFunction
        self.activity = activity
    }
}
