/// The watched thread (the main thread: tid == pid).
public struct ReportThreadInfo: Codable, Sendable, Equatable {
    public var tid: Int32
    /// `/proc/PID/task/TID/comm`.
    public var name: String

    public init(tid: Int32, name: String) {
        self.tid = tid
        self.name = name
    }
}
