import StallProc
import StallCapture
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
        /// Whether the modules read last include the executable `executablePath` names.
        var mapsExecutable: Bool { get }
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
    /// Re-reads left for an identity read in the middle of an exec (see `isHalfRead`).
    private(set) var settleReadsLeft = 0
    /// How many times an identity read mid-exec is read again, and how far apart: the kernel
    /// finishes an exec within microseconds of its own work, so a few reads 20 ms apart always
    /// see the end of it, and an executable that truly has no mapping (or no command line)
    /// costs no more than these.
    static let settleReads = 10
    static let settleSpacing = 0.02

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
        settleReadsLeft = Self.isHalfRead(process, target) ? Self.settleReads : 0
    }

    /// An exec seen while the kernel is still in it: the new name and executable are set
    /// before the program is mapped and before its arguments are on its stack, so /proc gives
    /// an empty command line and maps without the executable (whose build-id would then be
    /// the loader's). Reports written from such a read named the new program with the old
    /// program's build-id or none, and no command line (a clean-clone CI run of
    /// `attack8_execReloadsTheProcessIdentity`, under load).
    static func isHalfRead(_ process: ReportProcessInfo, _ target: Target) -> Bool {
        process.commandLine?.isEmpty == true || (process.path != nil && !target.mapsExecutable)
    }

    /// Reads a half-read identity again (the caller re-read the maps first); true once it is
    /// whole or the re-reads are spent.
    mutating func settle(of target: Target) -> Bool {
        guard settleReadsLeft > 0 else { return true }
        settleReadsLeft -= 1
        (process, thread) = Self.read(target, redactArgv: redactArgv, unit: unit)
        if !Self.isHalfRead(process, target) { settleReadsLeft = 0 }
        return settleReadsLeft == 0
    }

    /// The same program under a new name: reports take it.
    mutating func noteRename(of target: Target) {
        renameCount = target.renameCount
        (process, thread) = Self.read(target, redactArgv: redactArgv, unit: unit)
    }
}

extension ProcessInspector: ProgramIdentity.Target {
    var mainBuildID: String? { mainModule?.image?.buildID }

    var mapsExecutable: Bool { modules.modules.contains { $0.path == executablePath } }

    func currentCommandLine() -> [String]? {
        (try? ProcFS.readBytes("/proc/\(pid)/cmdline", pid: pid))
            .map { $0.split(separator: 0).map { String(decoding: $0, as: UTF8.self) } }
    }

    func currentExecutablePath() -> String? {
        try? ProcFS.readLink("/proc/\(pid)/exe", pid: pid)
    }
}
