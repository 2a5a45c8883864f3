import Testing

@testable import StallMonitoring

/// What the watch does on an exec or a rename, and when it looks: a fake process that is both
/// the target read and the watch told, so one list keeps the order of what happened.
@Suite struct IdentityActingTests {
    /// The identity fake (pid, name, executable, what /proc/PID/exe says) with what acting on
    /// an exec needs besides.
    final class FakeProcess: ProgramIdentityTests.FakeTarget, IdentityActing.Target, IdentityActing.Watch {
        var isGoProgram = false
        /// What a refresh of the maps says.
        var mapsChanged = false
        /// What a fresh stat says.
        var stat: (name: String, startStack: UInt64?)? = ("bash", 0x7ffd_0000)
        var events: [String] = []

        func refreshModules(force: Bool) throws -> Bool {
            events.append("refresh")
            return mapsChanged
        }
        func reidentify() {
            events.append("reidentify")
            executablePath = exe
            name = exe.map { String($0.split(separator: "/").last ?? "") } ?? name
        }

        func statIdentity() -> (name: String, startStack: UInt64?)? {
            events.append("stat")
            return stat
        }
        func execBegan(at now: Double) { events.append("execBegan \(now)") }
        func processRenamed(_ name: String) { events.append("named \(name)") }
        func execdGoProgram() { events.append("go") }
        func forgetOldProgram() { events.append("forget") }

        /// The process exec'd `path`, and the reader counted it.
        func exec(_ path: String) {
            exe = path
            execCount += 1
        }
    }

    static func acting(_ process: FakeProcess, quiet: Bool = false, log: @escaping (String) -> Void = { _ in }) -> IdentityActing {
        IdentityActing(of: process, redactArgv: false, unit: nil, quiet: quiet, log: log)
    }

    /// The detector hears of it before the process is read again; the old program is
    /// forgotten last, after the line that says it.
    @Test func anExecIsActedOnInOrder() {
        let process = FakeProcess()
        var lines: [String] = []
        let acting = Self.acting(process) { lines.append($0) }
        process.exec("/usr/bin/python3")
        acting.actOnChanges(at: 5, in: process)
        #expect(process.events == ["execBegan 5.0", "reidentify", "named python3", "forget"])
        #expect(lines == ["stallagent: bash [4242] exec'd /usr/bin/python3; reports now name it python3"])
        #expect(acting.process.name == "python3")
        #expect(acting.process.path == "/usr/bin/python3")
        process.events = []
        acting.actOnChanges(at: 6, in: process)
        #expect(process.events.isEmpty, "acted on once")
        // Quiet: the same acting, no line.
        let quietProcess = FakeProcess()
        var quietLines: [String] = []
        let quiet = Self.acting(quietProcess, quiet: true) { quietLines.append($0) }
        quietProcess.exec("/usr/bin/python3")
        quiet.actOnChanges(at: 5, in: quietProcess)
        #expect(quietProcess.events.last == "forget")
        #expect(quietLines.isEmpty)
    }

    /// A Go program is said even when quiet, and its watch ends without starting afresh.
    @Test func anExecOfAGoProgramEndsTheWatch() {
        let process = FakeProcess()
        var lines: [String] = []
        let acting = Self.acting(process, quiet: true) { lines.append($0) }
        process.exec("/usr/local/bin/hugo")
        process.isGoProgram = true
        acting.noteExec(at: 2, in: process)
        #expect(process.events == ["execBegan 2.0", "reidentify", "named hugo", "go"])
        #expect(lines.count == 1)
        #expect(lines.first?.hasPrefix("stallagent: bash [4242] exec'd /usr/local/bin/hugo, a Go program: ") == true)
        #expect(lines.first?.hasSuffix("; it is not watched any more") == true)
    }

    /// The same program under a new name: named anew, said only when the name differs, and
    /// the watch goes on.
    @Test func aRenameOnlyNamesItAnew() {
        let process = FakeProcess()
        var lines: [String] = []
        let acting = Self.acting(process) { lines.append($0) }
        process.name = "worker"
        process.renameCount = 1
        acting.actOnChanges(at: 1, in: process)
        #expect(process.events == ["named worker"])
        #expect(lines == ["stallagent: bash [4242] is now called worker; reports now name it so"])
        process.renameCount = 2
        acting.actOnChanges(at: 2, in: process)
        #expect(process.events == ["named worker", "named worker"])
        #expect(lines.count == 1, "the same name is not said again")
    }

    /// Nothing before a second; then the maps at the first check without a stat, and stat
    /// after, the maps only when stat moved.
    @Test func theChecksReadStatAndTheMapsOnSchedule() {
        let process = FakeProcess()
        let acting = Self.acting(process)
        acting.begin(at: 100)
        #expect(!acting.checkIfDue(at: 100.5, in: process))
        #expect(!acting.checks.checked)
        #expect(acting.checkIfDue(at: 101, in: process))
        #expect(acting.checks.checked)
        #expect(process.events == ["refresh"], "the maps are due at the first check")
        process.events = []
        #expect(acting.checkIfDue(at: 102, in: process))
        #expect(acting.checkIfDue(at: 103, in: process))
        #expect(process.events == ["stat", "stat"], "stat unmoved: no maps")
        process.events = []
        process.stat = ("python3", 0x7ffd_0000)
        process.exec("/usr/bin/python3")
        process.mapsChanged = true
        #expect(acting.checkIfDue(at: 104, in: process))
        #expect(process.events == ["stat", "refresh", "execBegan 104.0", "reidentify", "named python3", "forget"])
    }

    /// A probe's stat that moved has the identity checked at once, maps first.
    @Test func aProbesStatThatMovedIsCheckedAtOnce() {
        let process = FakeProcess()
        let acting = Self.acting(process)
        acting.noteStat(name: "bash", startStack: 0x7ffd_0000, at: 1, in: process)
        #expect(process.events.isEmpty, "the first stat starts the record")
        acting.noteStat(name: "bash", startStack: 0x7ffe_0000, at: 2, in: process)
        #expect(process.events == ["refresh"], "a new stack base: maps unchanged, nothing counted")
        process.exec("/usr/bin/bash")
        acting.noteStat(name: "bash", startStack: 0x7fff_0000, at: 3, in: process)
        #expect(process.events == ["refresh", "refresh", "execBegan 3.0", "reidentify", "named bash", "forget"])
        #expect(!acting.executableChanged)
        process.exe = "/usr/bin/perl"
        #expect(acting.executableChanged)
    }

    /// An exec read mid-way (no command line yet) is read again, spaced, until whole; then
    /// the summary takes the name.
    @Test func aHalfReadExecIsSettled() {
        let process = FakeProcess()
        let acting = Self.acting(process)
        process.commandLine = []
        process.exec("/usr/bin/python3")
        acting.noteExec(at: 6, in: process)
        #expect(acting.settleReadsLeft == ProgramIdentity.settleReads)
        process.events = []
        acting.settleIfDue(at: 6, in: process)
        #expect(process.events == ["refresh"], "still half read: not named yet")
        #expect(acting.settleReadsLeft == ProgramIdentity.settleReads - 1)
        process.commandLine = ["python3", "app.py"]
        acting.settleIfDue(at: 6 + ProgramIdentity.settleSpacing / 2, in: process)
        #expect(process.events == ["refresh"], "too soon")
        acting.settleIfDue(at: 6 + ProgramIdentity.settleSpacing, in: process)
        #expect(process.events == ["refresh", "refresh", "named python3"])
        #expect(acting.settleReadsLeft == 0)
        #expect(acting.process.commandLine == ["python3", "app.py"])
    }
}
