import StallProc
import StallReports

/// Acts on what `ProgramIdentity` finds, when `IdentityCheckSchedule` says to look: re-reads the
/// maps, tells an exec from a rename, names the process anew in reports and in what the agent
/// says, and has the watch (`Watch`) start afresh after an exec.
final class IdentityActing {
    /// What is read of the target and re-read after an exec: the `ProcessInspector`, or a fake
    /// in tests.
    protocol Target: ProgramIdentity.Target {
        /// The executable was built by Go (see `ProcessInspector.isGoProgram`).
        var isGoProgram: Bool { get }
        /// Re-reads the maps (rebuilt only if they changed, unless `force`); true when they changed.
        func refreshModules(force: Bool) throws -> Bool
        /// After an exec: the name and executable (and the maps) are the new program's.
        func reidentify()
    }

    /// What an exec or a rename changes in the watch: the monitor, or a fake in tests.
    protocol Watch: AnyObject {
        /// A fresh stat's name and stack base (nil: it cannot be read).
        func statIdentity() -> (name: String, startStack: UInt64?)?
        /// An exec began: what the detector has open is the old program's.
        func execBegan(at now: Double)
        /// The process is now called `name` (the summary names it so).
        func processRenamed(_ name: String)
        /// The process exec'd a Go program, which is not watched.
        func execdGoProgram()
        /// The old program's wait sites, loop and runner frames and caches are forgotten.
        func forgetOldProgram()
    }

    let target: Target
    private let quiet: Bool
    private let log: (String) -> Void
    private(set) var identity: ProgramIdentity
    /// When the identity is looked at again (see the type).
    private(set) var checks = IdentityCheckSchedule()

    init(of target: Target, redactArgv: Bool, unit: String?, quiet: Bool, log: @escaping (String) -> Void) {
        self.target = target
        self.quiet = quiet
        self.log = log
        identity = ProgramIdentity(of: target, redactArgv: redactArgv, unit: unit)
    }

    /// Who the process is, as reports name it (see `ProgramIdentity`).
    var process: ReportProcessInfo { identity.process }
    var thread: ReportThreadInfo { identity.thread }
    /// Re-reads left for an identity read in the middle of an exec.
    var settleReadsLeft: Int { identity.settleReadsLeft }

    /// The watch begins at `now` (see `IdentityCheckSchedule.begin`).
    func begin(at now: Double) {
        checks.begin(at: now)
    }

    /// The once-a-second check, when it is due; true when it ran.
    func checkIfDue(at now: Double, in watch: Watch) -> Bool {
        guard checks.checkDue(at: now) else { return false }
        // Stat once a second, the maps only when it moved or every 30 s (see
        // `IdentityCheckSchedule`). refreshModules tells an exec (a new executable or
        // mapping) from a rename (the same ones under a new name).
        if checks.mapsDue(at: now) || statSaysMoved(in: watch) {
            check(at: now, in: watch)
            checks.mapsChecked(at: now)
        }
        checks.didCheck(at: now)
        return true
    }

    /// A half-read identity is read again when its spacing says so (see `IdentityCheckSchedule`).
    func settleIfDue(at now: Double, in watch: Watch) {
        if checks.settleDue(at: now, readsLeft: identity.settleReadsLeft) { settle(in: watch) }
    }

    /// A new name or stack base in a fresh stat since the last look (see `ProgramIdentity.moved`).
    private func statSaysMoved(in watch: Watch) -> Bool {
        watch.statIdentity().map { identity.moved(name: $0.name, startStack: $0.startStack) } ?? false
    }

    /// A probe's stat: a new name or stack base has the identity checked at once.
    func noteStat(name: String, startStack: UInt64?, at now: Double, in watch: Watch) {
        if identity.moved(name: name, startStack: startStack) { check(at: now, in: watch) }
    }

    /// Re-reads the maps and the name, and acts on an exec or a rename found.
    func check(at now: Double, in watch: Watch) {
        actOnChanges(at: now, mapsChanged: (try? target.refreshModules(force: false)) == true, in: watch)
    }

    /// Acts on the execs and renames the inspector counted since the last look (see
    /// `ProgramIdentity.change`).
    func actOnChanges(at now: Double, mapsChanged: Bool = false, in watch: Watch) {
        switch identity.change(in: target, mapsChanged: mapsChanged) {
        case .exec: noteExec(at: now, in: watch)
        case .rename: noteRename(in: watch)
        case nil: break
        }
    }

    /// /proc names another executable than the one read last (see `ProgramIdentity`).
    var executableChanged: Bool { identity.executableChanged(in: target) }

    /// An identity read in the middle of an exec is read again, maps first (see
    /// `ProgramIdentity.isHalfRead`).
    func settle(in watch: Watch) {
        // Rebuilt only if the maps changed since (the program arriving in them): a forced
        // rebuild at each of up to ten re-reads cost a module list and lookups each time.
        _ = try? target.refreshModules(force: false)
        if identity.settle(of: target) { watch.processRenamed(identity.process.name) }
    }

    /// The same program under a new name: reports take it; the watch goes on as it was.
    private func noteRename(in watch: Watch) {
        let before = identity.process.name
        identity.noteRename(of: target)
        watch.processRenamed(identity.process.name)
        if !quiet, before != identity.process.name {
            log("stallagent: \(before.terminalSafe) [\(target.pid)] is now called \(identity.process.name.terminalSafe); reports now name it so")
        }
    }

    /// The process replaced its program (exec, e.g. pyenv's `bash` shim starting python): name
    /// it by what it runs now, forget what belonged to the old program (its modules, wait
    /// sites, loop and runner frames), and start its watch afresh.
    func noteExec(at now: Double, in watch: Watch) {
        watch.execBegan(at: now)
        let before = identity.process.name
        target.reidentify()
        identity.noteExec(of: target)
        watch.processRenamed(identity.process.name)
        if target.isGoProgram {
            log(
                "stallagent: \(before.terminalSafe) [\(target.pid)] exec'd \((identity.process.path ?? identity.process.name).terminalSafe), a Go program: "
                    + "\(StallAgentError.goProgramPhrase); it is not watched any more")
            watch.execdGoProgram()
            return
        }
        if !quiet {
            log(
                "stallagent: \(before.terminalSafe) [\(target.pid)] exec'd \((identity.process.path ?? identity.process.name).terminalSafe); reports now name it \(identity.process.name.terminalSafe)"
            )
        }
        watch.forgetOldProgram()
    }
}

extension ProcessInspector: IdentityActing.Target {}
