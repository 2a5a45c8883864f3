import StallCapture
import StallProc
import StallReports

/// Who the watched process is, as reports name it (name, path, build-id, command line), and
/// whether it exec'd or was renamed since the last look.
struct ProgramIdentity {
    /// What the identity reads of the target: the `ProcessInspector`, or a fake in tests.
    protocol Target: AnyObject {
        var pid: Int32 { get }
        var name: String { get }
        var executablePath: String? { get }
        /// Execs and renames the target's reader counted (in module checks and captures).
        var execCount: Int { get }
        var renameCount: Int { get }
        var mainBuildID: String? { get }
        func threadName(_ tid: Int32) -> String?
        /// The command line /proc shows now; nil when it cannot be read.
        func currentCommandLine() -> [String]?
        /// The executable /proc names now; nil when it cannot be read.
        func currentExecutablePath() -> String?
    }

    /// An exec or a rename to act on.
    enum Change: Equatable {
        case exec
        case rename
    }

    let redactArgv: Bool
    let unit: String?
    private(set) var process: ReportProcessInfo
    private(set) var thread: ReportThreadInfo
    /// The main thread's name at the latest probe: a change means the process exec'd or was
    /// renamed.
    private var lastComm: String?
    private var execCount = 0
    private var renameCount = 0
    /// The stack base (stat field 28) the latest stat showed: a new one means an exec began,
    /// under the same name too, and the maps are read again to see it.
    private var programStack: UInt64?

    init(of target: Target, redactArgv: Bool, unit: String?) {
        self.redactArgv = redactArgv
        self.unit = unit
        (process, thread) = Self.read(target, redactArgv: redactArgv, unit: unit)
    }

    /// Name, path, build-id and command line as they are now (at start, and after an exec).
    private static func read(_ target: Target, redactArgv: Bool, unit: String?) -> (ReportProcessInfo, ReportThreadInfo) {
        let commandLine = target.currentCommandLine().map { redactArgv ? ArgvRedactor.redact($0) : $0 }
        let process = ReportProcessInfo(
            pid: target.pid, name: target.name, path: target.executablePath,
            buildId: target.mainBuildID, commandLine: commandLine, unit: unit)
        let thread = ReportThreadInfo(tid: target.pid, name: target.threadName(target.pid) ?? target.name)
        return (process, thread)
    }

    /// Takes `stat`'s name and stack base and says whether either moved since the last stat
    /// read: a new name is an exec or a rename (prctl, a write to /proc/PID/comm), told apart
    /// by the maps; a new stack base an exec, under the same name too (haproxy -W re-executes
    /// its master on every reload).
    mutating func moved(name: String, startStack: UInt64?) -> Bool {
        let base = startStack.flatMap { $0 == 0 ? nil : $0 }
        let moved = lastComm.map { $0 != name } == true || (base != nil && programStack.map { $0 != base } == true)
        if let base { programStack = base }
        lastComm = name
        return moved
    }

    /// The execs and renames the target's reader counted since the last look (new maps may
    /// also be an exec it did not count: the executable is read again). An exec is another
    /// program, or the same one mapped anew (haproxy's master re-executes itself on every
    /// reload), and starts afresh (issue 24: the home wait learnt before a re-exec made the
    /// new program's own wait a stall that never ended).
    func change(in target: Target, mapsChanged: Bool) -> Change? {
        if mapsChanged || target.execCount != execCount {
            if executableChanged(in: target) || target.execCount != execCount { return .exec }
        }
        if target.renameCount != renameCount { return .rename }
        return nil
    }

    func executableChanged(in target: Target) -> Bool {
        guard let path = target.currentExecutablePath() else { return false }
        return path != target.executablePath
    }

    /// After an exec the target's reader re-identified: everything is read again.
    mutating func noteExec(of target: Target) {
        execCount = target.execCount
        renameCount = target.renameCount
        (process, thread) = Self.read(target, redactArgv: redactArgv, unit: unit)
    }

    /// The same program under a new name: reports take it.
    mutating func noteRename(of target: Target) {
        renameCount = target.renameCount
        (process, thread) = Self.read(target, redactArgv: redactArgv, unit: unit)
    }
}

extension ProcessInspector: ProgramIdentity.Target {
    var mainBuildID: String? { mainModule?.image?.buildID }

    func currentCommandLine() -> [String]? {
        (try? ProcFS.readBytes("/proc/\(pid)/cmdline", pid: pid))
            .map { $0.split(separator: 0).map { String(decoding: $0, as: UTF8.self) } }
    }

    func currentExecutablePath() -> String? {
        try? ProcFS.readLink("/proc/\(pid)/exe", pid: pid)
    }
}
