@testable import StallMonitoring

/// A process whose life is a script: changes scheduled on a manual clock run, in time order, as
/// the test advances it (in the spirit of swift-nio's EmbeddedChannel and EmbeddedEventLoop):
/// no process, no real clock. It is both what the identity roles read (the kernel's /proc
/// files, and a reader in the manner of `ProcessInspector`, which counts execs and renames when
/// it re-reads the maps) and the watch they tell, so one list keeps what happened, with when.
final class ScriptedProcess: IdentityActing.Target, IdentityActing.Watch {
    private(set) var now = 0.0
    private var script: [(at: Double, order: Int, change: (ScriptedProcess) -> Void)] = []
    /// What the roles told the watch and asked of the reader, as "time what".
    private(set) var events: [String] = []

    // The kernel's view: what /proc says now.
    var comm: String
    var exe: String?
    var commandLine: [String]?
    var startStack: UInt64
    /// Bumped by anything that changes the maps (an exec, a library loaded).
    var mapsVersion = 0
    /// The maps hold the executable's mapping (not yet, in the middle of an exec).
    var mapsExecutable = true

    // The reader's view, as of its last look at the maps.
    let pid: Int32
    private(set) var name: String
    private(set) var executablePath: String?
    private(set) var execCount = 0
    private(set) var renameCount = 0
    private var readMapsVersion = 0
    var mainBuildID: String? = "b1d"
    var isGoProgram = false

    init(pid: Int32 = 4242, comm: String, exe: String, commandLine: [String], startStack: UInt64 = 0x7ffd_0000) {
        self.pid = pid
        self.comm = comm
        self.exe = exe
        self.commandLine = commandLine
        self.startStack = startStack
        name = comm
        executablePath = exe
    }

    /// Runs `change` when the clock reaches `time`.
    func at(_ time: Double, _ change: @escaping (ScriptedProcess) -> Void) {
        script.append((time, script.count, change))
        script.sort { ($0.at, $0.order) < ($1.at, $1.order) }
    }

    /// Moves the clock to `time`, running every change due by then in order.
    func advance(to time: Double) {
        while let next = script.first, next.at <= time {
            script.removeFirst()
            now = next.at
            next.change(self)
        }
        now = time
    }

    // Scripted happenings.

    /// exec(2) of `path`: a new name, stack base and maps at once; the command line and the
    /// executable's mapping come with the kernel's end of it (`commandLine` nil: not yet).
    func exec(_ path: String, commandLine: [String]?) {
        exe = path
        comm = String(path.split(separator: "/").last ?? "")
        startStack &+= 0x1_0000
        mapsVersion += 1
        self.commandLine = commandLine ?? []
        mapsExecutable = commandLine != nil
    }

    /// The kernel finished the exec: the arguments are on the stack, the program mapped.
    func finishExec(commandLine: [String]) {
        self.commandLine = commandLine
        mapsExecutable = true
        mapsVersion += 1
    }

    /// prctl(PR_SET_NAME): the same program under another name.
    func rename(_ newName: String) {
        comm = newName
    }

    // IdentityActing.Target

    func threadName(_ tid: Int32) -> String? { tid == pid ? comm : nil }
    func currentCommandLine() -> [String]? { commandLine }
    func currentExecutablePath() -> String? { exe }

    func refreshModules(force: Bool) throws -> Bool {
        events.append("\(now) maps")
        guard force || mapsVersion != readMapsVersion else {
            if comm != name {
                name = comm
                renameCount += 1
            }
            return false
        }
        readMapsVersion = mapsVersion
        if let exe, exe != executablePath {
            executablePath = exe
            name = comm
            execCount += 1
        } else if comm != name {
            name = comm
            renameCount += 1
        }
        return true
    }

    func reidentify() {
        name = comm
        executablePath = exe ?? executablePath
        _ = try? refreshModules(force: true)
    }

    // IdentityActing.Watch

    func statIdentity() -> (name: String, startStack: UInt64?)? {
        (comm, startStack)
    }
    func execBegan(at now: Double) { events.append("\(now) exec began") }
    func processRenamed(_ name: String) { events.append("\(now) named \(name)") }
    func execdGoProgram() { events.append("\(now) go") }
    func forgetOldProgram() { events.append("\(now) forget") }
}
