/// Why `stallagent view` could not draw a report directory, with the exit code it documents
/// (sysexits, like the rest of the agent's codes).
public enum ViewError: Error, CustomStringConvertible, Equatable {
    case noSuchInput(path: String)
    case noReports(path: String)
    case corruptReport(path: String, reason: String)
    case cannotWrite(path: String, reason: String)

    public var description: String {
        switch self {
        case .noSuchInput(let path):
            return "\(path): no such report directory or report file"
        case .noReports(let path):
            return "\(path) holds no stall reports (no NAME_PID_TIME_REASON_ID.json from --report-dir, in it or two levels down)"
        case .corruptReport(let path, let reason):
            return "\(path) is not a readable stallagent report: \(reason)"
        case .cannotWrite(let path, let reason):
            return "cannot write \(path): \(reason)"
        }
    }

    /// 66 (EX_NOINPUT) nothing to read, 65 (EX_DATAERR) a report that does not parse,
    /// 73 (EX_CANTCREAT) the output cannot be written.
    public var exitCode: Int32 {
        switch self {
        case .noSuchInput, .noReports: return 66
        case .corruptReport: return 65
        case .cannotWrite: return 73
        }
    }
}
