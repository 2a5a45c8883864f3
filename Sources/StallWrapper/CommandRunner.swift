import CPosix
import StallCapture
import Foundation

import StallProc
import StallReports
import StallMonitoring
#if canImport(Glibc)
import Glibc
#endif

/// Runs a command under watch: spawns it with stdin/stdout/stderr untouched, watches it and
/// its descendants (one `StallMonitor` each, stepped from this thread), forwards signals,
/// reaps every descendant as a child subreaper, and exits with the command's status.
public final class CommandRunner {
    public let command: [String]
    public let options: RunOptions
    private let log: (String) -> Void
    private var monitors: [Int32: StallMonitor] = [:]
    private var finishedSummaries: [MonitorSummary] = []
    private var refused: Set<Int32> = []
    private var childStatus: Int32?
    private var childSignal: Int32?
    private var child: Int32 = 0
    private var ownGroup = false
    private var timedOut = false
    private var snapshots: [TimeoutSnapshot] = []
    /// Steps the watched descendants; set once the run starts.
    private var engine: WatchEngine<StallMonitor>?

    public init(command: [String], options: RunOptions, log: @escaping (String) -> Void) {
        self.command = command
        self.options = options
        // Every descendant gets its own monitor, and each says the same facts about the host
        // (no kernel counters, no perf_event): a build of 2000 processes would repeat them.
        var said: Set<String> = []
        self.log = { line in
            if said.count >= 1024 { said.removeAll() }  // bounded: a long run's stall lines are all distinct
            if said.insert(line).inserted { log(line) }
        }
    }

    /// The environment the command gets: ours, minus what belongs to our own supervisor
    /// (systemd's notify and watchdog sockets, socket activation).
    static func childEnvironment(preload: String?) -> [String] {
        var environment = ServiceNotifier.childEnvironment(ProcessInfo.processInfo.environment)
        if let preload {
            // First, so the probe's wrappers are the ones the program's calls bind to.
            environment["LD_PRELOAD"] = [preload, environment["LD_PRELOAD"]].compactMap { $0 }.joined(separator: ":")
        }
        return environment.map { "\($0.key)=\($0.value)" }
    }

    /// Spawns the command; maps "not found" and "not executable" to 127 and 126.
    func spawn() throws -> Int32 {
        guard let program = command.first, !program.isEmpty else {
            throw StallAgentError.invalidArgument("no command after --")
        }
        var pid: pid_t = 0
        let argv = command.map { strdup($0) } + [nil]
        let envp = CommandRunner.childEnvironment(preload: options.loopProbeLibrary).map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        let rc = sa_spawn(program, argv, envp, ownGroup ? 1 : 0, &pid)
        switch rc {
        case 0: return pid
        case ENOENT: throw RunError.commandNotFound(program)
        case EACCES, ENOEXEC, EISDIR, EPERM: throw RunError.notExecutable(program, rc)
        default: throw StallAgentError.system(operation: "spawn \(program)", errno: rc)
        }
    }

    public enum RunError: Error, CustomStringConvertible {
        case commandNotFound(String)
        case notExecutable(String, Int32)

        public var description: String {
            switch self {
            case .commandNotFound(let program): return "\(program): command not found"
            case .notExecutable(let program, let code): return "\(program): cannot execute: \(String(cString: strerror(code)))"
            }
        }

        public var exitCode: Int32 {
            switch self {
            case .commandNotFound: return RunExitCode.notFound
            case .notExecutable: return RunExitCode.notExecutable
            }
        }
    }

    /// Whether the command should lead a process group of its own: only when the agent has
    /// no controlling terminal. With one, the command must stay in the agent's (foreground)
    /// group to read the terminal and to stop with it on Ctrl-Z; without one there is no job
    /// control to keep, and a group of its own is what lets a signal sent to the agent's
    /// whole group reach the command once (through the agent) instead of twice.
    public static var commandGetsOwnGroup: Bool {
        let tty = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else { return true }
        close(tty)
        return false
    }

    /// Where a received signal goes, if anywhere. In its own group the command gets every
    /// signal from us; INT, TERM and HUP go to its whole group, as a terminal or a group kill
    /// would have sent them, the others (often meant for one program: a reload, dd's
    /// progress, and deadly to the rest by default) to the command alone. In our group, a
    /// terminal-generated signal reached it already.
    func forwardingTarget(of sig: Int32, fromTerminal: Bool) -> pid_t? {
        if ownGroup { return ForwardedSignals.fatal.contains(sig) ? -child : child }
        return fromTerminal ? nil : child
    }

    /// Runs to completion and says how the run ended.
    public func run() throws -> RunOutcome {
        // First: every thread the run starts must inherit the blocked signals.
        try ForwardedSignals.install()
        // Fail on an unusable report directory before starting anything.
        _ = try ReportWriter(directory: options.monitor.reportDirectory)
        _ = sa_set_child_subreaper()
        // The command's status must survive a reader that went away (`stallagent -- t | head`):
        // a late annotation or summary line gets EPIPE instead of killing the agent. The
        // command gets SIGPIPE's default back (sa_spawn resets every signal).
        signal(SIGPIPE, SIG_IGN)
        ownGroup = CommandRunner.commandGetsOwnGroup
        child = try spawn()
        // After the spawn: the command keeps the limit it was given (a program using select()
        // breaks on descriptors past 1024); the agent needs several per watched process.
        OpenFileLimit.raiseToHardLimit()
        let start = MonotonicTime.seconds()
        var nextDiscovery = start
        var terminateSentAt: Double?
        // The same engine as every other loop: a descendant asleep in its loop's wait (a server
        // the tests start) costs nothing until it wakes. SIGCHLD and the forwarded signals are
        // in the signal inbox the engine's wait includes, so an exit or a signal ends the wait.
        let engine = WatchEngine<StallMonitor>(probeInterval: options.monitor.probeInterval, start: start, seed: UInt64(child))
        self.engine = engine
        while childStatus == nil || !monitors.isEmpty {
            let now = MonotonicTime.seconds()
            for (sig, fromTerminal) in ForwardedSignals.take() {
                guard let target = forwardingTarget(of: sig, fromTerminal: fromTerminal) else { continue }
                // A command that left its group (setpgid) still gets the signal itself.
                if Glibc.kill(target, sig) != 0, target != child { Glibc.kill(child, sig) }
            }
            reapExited()
            if childStatus != nil {
                // One more probe lets each monitor see its target gone (a stall it was in
                // ends as "died", not "monitoring stopped"); then stop watching the rest.
                engine.wakeAll(monitors.values)
                for (_, monitor) in monitors {
                    monitor.accountIdleTime(until: now)
                    monitor.step(at: now)
                }
                for (_, monitor) in monitors { monitor.stop(at: now) }
                collectFinished(all: true)
                break
            }
            if now >= nextDiscovery {
                discoverDescendants(at: now)
                nextDiscovery = now + options.discoveryInterval
            }
            _ = engine.step(monitors.values, at: now)
            collectFinished(all: false)
            var deadline = nextDiscovery
            if let timeout = options.timeout {
                if now - start >= timeout {
                    if !timedOut {
                        timedOut = true
                        log(
                            "stallagent: --timeout \(Format.seconds(timeout)) reached: capturing every watched process, "
                                + "then terminating \(command[0]) [\(child)]")
                        engine.wakeAll(monitors.values)
                        for (_, monitor) in monitors.sorted(by: { $0.key < $1.key }) {
                            let snapshot = monitor.writeSnapshotReport(at: now)
                            snapshots.append(snapshot)
                            if let path = snapshot.reportPath {
                                log("stallagent: snapshot of \(snapshot.name.terminalSafe) [\(snapshot.pid)] → \(path)")
                            }
                        }
                        terminateTree(SIGTERM)
                        terminateSentAt = now
                    } else if let sent = terminateSentAt, now - sent >= options.terminateGrace {
                        terminateTree(SIGKILL)
                        terminateSentAt = .infinity
                    }
                    if let sent = terminateSentAt { deadline = min(deadline, sent + options.terminateGrace) }
                } else {
                    deadline = min(deadline, start + timeout)
                }
            }
            engine.endRound(at: now, idleDeadline: deadline)
        }
        // Reap what is left without waiting for it (a daemon the command started runs on).
        reapExited()
        var outcome = RunOutcome(status: RunExitCode.agentError, commandStatus: childStatus, commandSignal: childSignal)
        outcome.summaries = finishedSummaries
        outcome.snapshots = snapshots
        outcome.expiredTimeout = timedOut ? options.timeout : nil
        outcome.unwatched = unwatched
        outcome.unwatchedGo = unwatchedGo
        outcome.unwatchedForDescriptors = shortOfDescriptors.map { (name: $0.value, pid: $0.key) }.sorted { $0.pid < $1.pid }
        // The command's status passes through whatever its value; 125 only when the agent
        // lost it (it cannot, short of a bug, but it must not invent a status).
        if outcome.isFailure {
            outcome.status = RunExitCode.timedOut
        } else if let status = childStatus {
            if status == 0, (outcome.unwatched + outcome.unwatchedGo).contains(where: { $0.pid == child }) {
                outcome.status = RunExitCode.notWatched
            } else {
                outcome.status =
                    status == 0 && options.onStall == .fail && !outcome.stalls.isEmpty
                    ? RunExitCode.stallsFound : status
            }
            if let sig = childSignal, ForwardedSignals.fatal.contains(sig), ForwardedSignals.received(sig) {
                outcome.dieOfSignal = sig
            }
        }
        return outcome
    }

    private func reapExited() {
        while true {
            var status: Int32 = 0
            var signaled: Int32 = 0
            let pid = sa_reap_one(&status, &signaled)
            if pid <= 0 { break }
            if monitors[pid] != nil { ReapedExitLedger.shared.note(pid: pid, status: status, signal: signaled) }
            if pid == child {
                childStatus = status
                childSignal = signaled == 0 ? nil : signaled
            }
        }
        // A capture that was under way when the command exited may have reaped it.
        // Peeked, not taken: the command's monitor reads it too, to tell an exit from a death.
        if childStatus == nil, let reaped = ReapedExitLedger.shared.peek(pid: child) {
            childStatus = reaped.status
            childSignal = reaped.signal == 0 ? nil : reaped.signal
        }
    }

    private func collectFinished(all: Bool) {
        for (pid, monitor) in monitors where all || monitor.finished {
            let summary = monitor.end()
            finishedSummaries.append(summary)
            // Said by the monitor when it saw the exec; not watched again.
            if summary.execdGoProgram {
                refused.insert(pid)
                unwatchedGo.append((summary.name, pid))
            }
            if pid != child { _ = ReapedExitLedger.shared.take(pid: pid) }
            engine?.remove(monitor)
            monitors[pid] = nil
        }
    }

    /// Finds the command's descendants — including orphans re-parented to us — and starts
    /// watching new ones (the command always; others filtered by `--follow`). Walks the tree
    /// down from the agent through `/proc/PID/task/TID/children`: reading every process's stat
    /// on the machine, four times a second, was a good part of what wrapping cost.
    private func discoverDescendants(at now: Double) {
        // The agent's own stop guardian (stop_guard.h) is a child too, not the command's.
        let guardian = StopGuardian.pid
        var queue = CommandRunner.children(of: getpid()).filter { $0 != guardian }
        var seen: Set<Int32> = []
        let uptime = self.uptime()
        while let pid = queue.popLast() {
            guard seen.count < 65_536, seen.insert(pid).inserted else { continue }
            queue += CommandRunner.children(of: pid)
            guard monitors[pid] == nil, !refused.contains(pid),
                let text = try? ProcFS.readText("/proc/\(pid)/stat", pid: pid),
                let stat = ProcThreadStat.parse(text), stat.state != "Z"
            else { continue }
            // A descendant younger than half the threshold cannot be a candidate yet, and most
            // of a build's or a test script's processes (cc1, as, sh, true) end sooner: watching
            // each from birth (opening its files, a first sample, its symbol tables) was most of
            // what wrapping cost them. Looked at again at the next discovery.
            if pid != child, let uptime,
                uptime - Double(stat.startTicks) / CommandRunner.clockTicks < minimumDescendantAge
            {
                continue
            }
            if pid != child, !options.follow.isEmpty, !options.follow.contains(where: { stat.name.contains($0) }) {
                continue
            }
            // Past the open-file limit a monitor cannot open its files: a run of hundreds of
            // processes keeps what it needs to report the ones it watches, and says which it
            // does not (issue 27). Looked at again at the next discovery.
            if OpenFileLimit.nearlyExhausted(reserve: OpenFileLimit.watchReserve) {
                noteDescriptorShortage(pid: pid, name: stat.name)
                continue
            }
            shortOfDescriptors[pid] = nil
            do {
                let monitor = try StallMonitor(pid: pid, options: options.monitor, joinedAfterStart: pid != child, log: log)
                monitor.begin(at: now)
                monitors[pid] = monitor
                engine?.add(monitor)
            } catch StallAgentError.goProgram {
                refused.insert(pid)
                noteGoProgram(pid: pid, name: stat.name)
            } catch StallAgentError.permissionDenied {
                // Not ours to trace (a setuid or file-capability program, run by an agent
                // without CAP_SYS_PTRACE): said, never silently skipped (issue 27).
                refused.insert(pid)
                notePermissionDenied(pid: pid, name: stat.name)
            } catch {
                // Gone already: not an error of the run.
                refused.insert(pid)
            }
        }
    }

    private var unwatched: [(name: String, pid: Int32)] = []

    /// Processes of the run not watched for want of descriptors, by name (while they are not).
    private var shortOfDescriptors: [Int32: String] = [:]
    private var saidShortOfDescriptors = false

    private func noteDescriptorShortage(pid: Int32, name: String) {
        shortOfDescriptors[pid] = name
        guard !saidShortOfDescriptors else { return }
        saidShortOfDescriptors = true
        log(
            "stallagent: the open-file limit (\(OpenFileLimit.soft)) leaves no descriptors to watch \(name.terminalSafe) [\(pid)]: "
                + "it and further processes of the run are watched only as others end, and the summary counts "
                + "those never watched (raise the hard limit: ulimit -Hn, LimitNOFILE=)")
    }

    /// Go programs of the run (the `go` tool, its compiler, test binaries), not watched.
    private var unwatchedGo: [(name: String, pid: Int32)] = []

    /// Says the first Go program of the run and counts the rest (`go test` runs several).
    private func noteGoProgram(pid: Int32, name: String) {
        unwatchedGo.append((name, pid))
        guard unwatchedGo.count == 1 else { return }
        let which = pid == child ? "the command" : "a process of the run"
        log(
            "stallagent: \(name.terminalSafe) [\(pid)], \(which), is a Go program: \(StallAgentError.goProgramPhrase); "
                + "it and any other Go program of the run are not watched (the summary counts them)")
    }

    /// Says the first few refusals and counts the rest (a suite that runs `sudo` per test
    /// must not flood the log).
    private func notePermissionDenied(pid: Int32, name: String) {
        unwatched.append((name, pid))
        let which = pid == child ? "the command" : "a process of the run"
        if unwatched.count <= 5 {
            log(
                "stallagent: cannot watch \(name.terminalSafe) [\(pid)], \(which): permission denied (a setuid or "
                    + "file-capability program; tracing it needs root or CAP_SYS_PTRACE)"
                    + (pid == child ? "; its own children are watched where permitted" : ""))
        } else if unwatched.count == 6 {
            log("stallagent: more processes of the run cannot be watched; the summary counts them")
        }
    }

    /// The children of every thread of `pid` (a child belongs to the thread that forked it).
    static func children(of pid: Int32) -> [Int32] {
        let tasks = (try? ProcFS.numericEntries(in: "/proc/\(pid)/task")) ?? [pid]
        var result: [Int32] = []
        for tid in tasks {
            guard let text = try? ProcFS.readText("/proc/\(pid)/task/\(tid)/children", pid: pid) else { continue }
            result += text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int32($0) }
        }
        return result
    }

    /// Half the smallest threshold a descendant could be held to.
    private var minimumDescendantAge: Double {
        min(options.monitor.threshold, options.monitor.batchThreshold ?? .infinity) / 2
    }

    private static let clockTicks = Double(sysconf(Int32(_SC_CLK_TCK)))

    private func uptime() -> Double? {
        (try? ProcFS.readText("/proc/uptime")).flatMap { Double($0.split(separator: " ").first ?? "") }
    }

    /// The command and every process under it (or re-parented to us).
    private func terminateTree(_ sig: Int32) {
        Glibc.kill(child, sig)
        // Its own group also holds descendants not watched (--follow) or not yet discovered.
        if ownGroup { Glibc.kill(-child, sig) }
        for pid in monitors.keys where pid != child { Glibc.kill(pid, sig) }
    }
}
