import Testing

@testable import StallMonitoring

/// Identity scenarios played on a `ScriptedProcess`, probed every 10 ms the way `StallMonitor`
/// steps: a probe's stat first, then the once-a-second check, then settling.
@Suite struct IdentityScenarioTests {
    /// Probes from the process's clock to `end`, 100 times a second (times counted in ticks, so
    /// they are the decimals they print as).
    static func probe(_ process: ScriptedProcess, _ acting: IdentityActing, until end: Double) {
        var tick = Int((process.now * 100).rounded(.down)) + 1
        while Double(tick) / 100 <= end {
            process.advance(to: Double(tick) / 100)
            if let stat = process.statIdentity() {
                acting.noteStat(name: stat.name, startStack: stat.startStack, at: process.now, in: process)
            }
            _ = acting.checkIfDue(at: process.now, in: process)
            acting.settleIfDue(at: process.now, in: process)
            tick += 1
        }
    }

    static func start(_ process: ScriptedProcess, lines: @escaping (String) -> Void) -> IdentityActing {
        let acting = IdentityActing(of: process, redactArgv: false, unit: nil, quiet: false, log: lines)
        acting.begin(at: process.now)
        return acting
    }

    /// pyenv's shim: bash execs python3 at 0.505 s, and the kernel has not put the arguments
    /// on its stack until 0.545 s. The next probe's stat sees the exec; the reports name
    /// python3 at once, and its command line once a settling re-read finds it whole (20 ms apart).
    @Test func anExecSeenMidWayIsNamedAtOnceAndSettled() {
        let process = ScriptedProcess(comm: "bash", exe: "/usr/bin/bash", commandLine: ["bash", "pytest"])
        var lines: [String] = []
        let acting = Self.start(process) { lines.append($0) }
        process.at(0.505) { $0.exec("/usr/bin/python3", commandLine: nil) }
        process.at(0.545) { $0.finishExec(commandLine: ["python3", "-m", "pytest"]) }
        Self.probe(process, acting, until: 0.6)
        #expect(
            process.events == [
                "0.51 maps", "0.51 exec began", "0.51 maps", "0.51 named python3", "0.51 forget",
                // Settling: due at once, then every 20 ms; whole at the third read.
                "0.51 maps", "0.53 maps", "0.55 maps", "0.55 named python3",
            ])
        #expect(lines == ["stallagent: bash [4242] exec'd /usr/bin/python3; reports now name it python3"])
        #expect(acting.process.name == "python3")
        #expect(acting.process.commandLine == ["python3", "-m", "pytest"])
        #expect(acting.settleReadsLeft == 0)
    }

    /// A rename between two stats is acted on at the next probe; the once-a-second check reads
    /// only stat while nothing moved, and the maps every 30 s.
    @Test func aRenameIsNamedAtTheNextProbeAndTheChecksStayCheap() {
        let process = ScriptedProcess(comm: "python3", exe: "/usr/bin/python3", commandLine: ["python3", "app.py"])
        var lines: [String] = []
        let acting = Self.start(process) { lines.append($0) }
        process.at(2.503) { $0.rename("worker-1") }
        Self.probe(process, acting, until: 31.5)
        #expect(process.events == ["1.0 maps", "2.51 maps", "2.51 named worker-1", "31.0 maps"])
        #expect(lines == ["stallagent: python3 [4242] is now called worker-1; reports now name it so"])
        #expect(acting.process.name == "worker-1")
    }

    /// A library loaded (dlopen) changes the maps, not the program: the 30 s re-read finds the
    /// new maps and acts on nothing.
    @Test func aLibraryLoadedIsNoExec() {
        let process = ScriptedProcess(comm: "node", exe: "/usr/bin/node", commandLine: ["node", "server.js"])
        var lines: [String] = []
        let acting = Self.start(process) { lines.append($0) }
        process.at(1.5) { $0.mapsVersion += 1 }
        Self.probe(process, acting, until: 31)
        #expect(process.events == ["1.0 maps", "31.0 maps"])
        #expect(lines.isEmpty)
        #expect(acting.process.name == "node")
    }
}
