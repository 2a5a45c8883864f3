import Testing

@testable import StallMonitoring
import StallReports

/// Execs and renames told from a fake target: what stat, the maps and the executable say.
@Suite struct ProgramIdentityTests {
    /// Also the base of `IdentityActingTests.FakeProcess`.
    class FakeTarget: ProgramIdentity.Target {
        var pid: Int32 = 4242
        var name = "bash"
        var executablePath: String? = "/usr/bin/bash"
        var execCount = 0
        var renameCount = 0
        var mainBuildID: String? = "abc123"
        var threadNames: [Int32: String] = [:]
        var commandLine: [String]? = ["bash", "run.sh"]
        /// What /proc/PID/exe says now (nil: unreadable).
        var exe: String? = "/usr/bin/bash"
        var mapsExecutable = true

        func threadName(_ tid: Int32) -> String? { threadNames[tid] }
        func currentCommandLine() -> [String]? { commandLine }
        func currentExecutablePath() -> String? { exe }
    }

    @Test func readsWhoTheProcessIs() {
        let target = FakeTarget()
        target.threadNames[4242] = "main"
        let identity = ProgramIdentity(of: target, redactArgv: false, unit: "app.service")
        #expect(identity.process.pid == 4242)
        #expect(identity.process.name == "bash")
        #expect(identity.process.path == "/usr/bin/bash")
        #expect(identity.process.buildId == "abc123")
        #expect(identity.process.commandLine == ["bash", "run.sh"])
        #expect(identity.process.unit == "app.service")
        #expect(identity.thread.tid == 4242)
        #expect(identity.thread.name == "main")
        // A thread whose name cannot be read is named after the process.
        target.threadNames = [:]
        #expect(ProgramIdentity(of: target, redactArgv: false, unit: nil).thread.name == "bash")
    }

    @Test func redactsTheCommandLineWhenAsked() {
        let target = FakeTarget()
        target.commandLine = ["app", "--password", "hunter2"]
        let redacted = ProgramIdentity(of: target, redactArgv: true, unit: nil)
        #expect(redacted.process.commandLine == ArgvRedactor.redact(["app", "--password", "hunter2"]))
        #expect(redacted.process.commandLine?.contains("hunter2") == false)
        #expect(ProgramIdentity(of: target, redactArgv: false, unit: nil).process.commandLine?.contains("hunter2") == true)
    }

    /// The first stat only starts the record; a new name moves, and so does a new stack base
    /// under the same name (haproxy -W re-executes its master on every reload).
    @Test func aNewNameOrStackBaseInStatIsAMove() {
        var identity = ProgramIdentity(of: FakeTarget(), redactArgv: false, unit: nil)
        let stats: [(name: String, stack: UInt64?)] = [
            ("bash", 0x7ffd_0000), ("bash", 0x7ffd_0000), ("python3", 0x7ffd_0000), ("python3", 0x7ffd_0000),
            ("python3", 0x7ffe_0000),
            // No stack base (0 or unreadable) says nothing.
            ("python3", 0), ("python3", nil), ("python3", 0x7ffe_0000),
        ]
        let moves = stats.map { identity.moved(name: $0.name, startStack: $0.stack) }
        #expect(moves == [false, false, true, false, true, false, false, false])
    }

    @Test func anExecTheReaderCountedIsAnExec() {
        let target = FakeTarget()
        var identity = ProgramIdentity(of: target, redactArgv: false, unit: nil)
        #expect(identity.change(in: target, mapsChanged: false) == nil)
        target.execCount = 1
        target.renameCount = 1
        #expect(identity.change(in: target, mapsChanged: false) == .exec)
        target.name = "python3"
        target.executablePath = "/usr/bin/python3"
        target.exe = "/usr/bin/python3"
        identity.noteExec(of: target)
        #expect(identity.process.name == "python3")
        #expect(identity.process.path == "/usr/bin/python3")
        // Counted once: nothing is pending after it, not even the rename it counted with it.
        #expect(identity.change(in: target, mapsChanged: false) == nil)
    }

    /// New maps with another executable behind them: an exec the reader did not count. New maps
    /// of the same executable (a library loaded) are not.
    @Test func newMapsAreAnExecOnlyWhenTheExecutableChanged() {
        let target = FakeTarget()
        let identity = ProgramIdentity(of: target, redactArgv: false, unit: nil)
        #expect(identity.change(in: target, mapsChanged: true) == nil)
        target.exe = "/usr/bin/python3"
        #expect(identity.executableChanged(in: target))
        #expect(identity.change(in: target, mapsChanged: true) == .exec)
        // Not looked at without new maps or a counted exec.
        #expect(identity.change(in: target, mapsChanged: false) == nil)
        // An executable that cannot be read is no change.
        target.exe = nil
        #expect(!identity.executableChanged(in: target))
    }

    @Test func aRenameTakesTheNewName() {
        let target = FakeTarget()
        var identity = ProgramIdentity(of: target, redactArgv: false, unit: nil)
        target.name = "worker"
        target.renameCount = 1
        #expect(identity.change(in: target, mapsChanged: false) == .rename)
        identity.noteRename(of: target)
        #expect(identity.process.name == "worker")
        #expect(identity.change(in: target, mapsChanged: false) == nil)
        // Still the same program: a later counted exec is an exec.
        target.execCount = 1
        #expect(identity.change(in: target, mapsChanged: false) == .exec)
    }

    /// An exec seen mid-way (the new name and executable set, the program not yet mapped, its
    /// arguments not yet on its stack) is read again until it is whole, and at most
    /// `settleReads` times when it never becomes so.
    @Test func anIdentityReadMidExecIsReadAgainUntilWhole() {
        let target = FakeTarget()
        var identity = ProgramIdentity(of: target, redactArgv: false, unit: nil)
        target.name = "otherprog"
        target.executablePath = "/tmp/otherprog"
        target.execCount = 1
        target.commandLine = []
        target.mapsExecutable = false
        target.mainBuildID = "loader"
        identity.noteExec(of: target)
        #expect(identity.process.name == "otherprog")
        #expect(identity.settleReadsLeft == ProgramIdentity.settleReads)
        let first = identity.settle(of: target)
        #expect(!first)
        target.commandLine = ["/tmp/otherprog", "loop"]
        target.mapsExecutable = true
        target.mainBuildID = "feed"
        let second = identity.settle(of: target)
        #expect(second)
        #expect(identity.process.commandLine == ["/tmp/otherprog", "loop"])
        #expect(identity.process.buildId == "feed")
        #expect(identity.settleReadsLeft == 0)

        // A whole read needs no settling; one that never becomes whole stops re-reading.
        identity.noteExec(of: target)
        #expect(identity.settleReadsLeft == 0)
        target.commandLine = []
        identity.noteExec(of: target)
        var reads = 0
        while !identity.settle(of: target) { reads += 1 }
        #expect(reads == ProgramIdentity.settleReads - 1)
        let spent = identity.settle(of: target)
        #expect(spent)
    }
}
