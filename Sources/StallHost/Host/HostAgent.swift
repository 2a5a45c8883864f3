import Foundation

import StallDetection
import StallProc
import StallReports
import StallMonitoring
#if canImport(Glibc)
import Glibc
#endif

/// The long-running agent: watches every configured target — a unit's every process by
/// default, attaching to new workers as they appear and letting go of exited ones — follows a
/// target across restarts, and reports into the places operators look — the journal (when
/// stderr is the journal), Prometheus metrics, systemd's notify socket — while keeping the
/// report directory within its retention limits. One thread steps every monitor, as the
/// command wrapper does, because ptrace belongs to the thread that attached.
public final class HostAgent {
    final class Slot {
        let spec: TargetSpec
        let options: MonitorOptions
        /// The watched processes of the target, in attach order (its main process first).
        var monitors: [StallMonitor] = []
        var nextAttempt = 0.0
        var lastWaitMessage: String?
        var book: StallFingerprintBook
        var summaries: [MonitorSummary] = []
        /// A pid target whose process is gone: nothing more to do.
        var done = false
        var stalls = 0
        /// Watching a whole target: the unit's cgroup while it has one, when the wider scans
        /// run next, processes that could not be watched (until when), refusals already logged.
        var cgroup: String?
        var nextFullScan = 0.0
        var refused: [Int32: Double] = [:]
        var loggedRefusals: Set<String> = []
        /// Processes refused for want of descriptors (see `noteDescriptorRefusal`) and not
        /// watched since, and how many were watched later (sleeping processes gave their probe
        /// files back).
        var unwatchedForDescriptors: Set<Int32> = []
        var watchedLate = 0
        var descriptorRefusals: Int { unwatchedForDescriptors.count + watchedLate }
        var saidMainOnly = false
        let family = ProcessFamily()
        /// `--follow-children`: watched processes awake at some round since the last wide scan,
        /// and when the wide scan next covers the sleeping ones too (see `watchFamily`).
        var awakeSinceWideScan: Set<Int32> = []
        var nextSleeperScan = 0.0

        init(spec: TargetSpec, options: MonitorOptions, book: StallFingerprintBook) {
            self.spec = spec
            self.options = options
            self.book = book
        }
    }

    public let configuration: AgentConfiguration
    private let slots: [Slot]
    private let log: (String) -> Void
    private let resolver: TargetResolver
    private let journal: JournalWriter?
    /// `--state-dir`'s fingerprints directory and `--metrics-file`'s directory, opened once.
    private let stateFiles: ReportWriter?
    private let metricsDirectory: (directory: ReportWriter, name: String)?
    private let notifier: ServiceNotifier
    public let metrics: AgentMetrics?
    /// Called once a round with every watched process (`stallagent top` draws them); returning
    /// false ends the run as a stop request would.
    public var roundObserver: ((_ now: Double, _ monitors: [StallMonitor]) -> Bool)?
    /// Told of every stall event after the agent's own handling (journal, metrics).
    public var stallObserver: ((_ event: StallMonitorEvent, _ monitor: StallMonitor) -> Void)?
    /// Descriptors whose input wakes the round while every thread sleeps (top's keyboard).
    public var extraWakeDescriptors: [Int32] = []
    private let listener: MetricsListener?
    private let environment: [String: String]
    /// Steps the awake watched threads, sleeps the settled ones, waits for the next round.
    private let engine: WatchEngine<StallMonitor>
    /// An error that ends the run (a unit that lacks a capability): restarting cannot fix it.
    private var fatal: StallAgentError?
    private var nextMetricsWrite = 0.0
    private var nextRetention = 0.0
    private var nextMetricsUpdate = 0.0
    private var nextStatusUpdate = 0.0
    private var warnedMetricsFile = false

    /// Validates everything a bad setting could break (report and state directories, the
    /// metrics address) and attaches to `pid` targets at once, so `--pid` of a process that
    /// does not exist fails now with its exit code rather than waiting.
    public init(
        configuration: AgentConfiguration, environment: [String: String] = ProcessInfo.processInfo.environment,
        log: @escaping (String) -> Void
    ) throws {
        self.configuration = configuration
        self.log = log
        self.environment = environment
        guard !configuration.targets.isEmpty else { throw StallAgentError.invalidArgument("nothing to watch: give --pid, --unit, --pidfile or --config") }
        // Both kept open from here: files in them are written relative to the directory, never
        // by path again (see `ReportWriter.replaceFile`).
        if let state = configuration.stateDirectory {
            stateFiles = try ReportWriter(directory: state + "/fingerprints")
        } else {
            stateFiles = nil
        }
        resolver = TargetResolver(environment: environment)
        OpenFileLimit.raiseToHardLimit()
        notifier = ServiceNotifier(environment: environment)
        var journal: JournalWriter?
        if JournalWriter.stderrIsJournal(environment: environment) {
            let path = environment["STALLAGENT_JOURNAL_SOCKET"] ?? JournalWriter.defaultSocketPath
            do {
                journal = try JournalWriter(socketPath: path)
            } catch {
                log("stallagent: warning: stderr is the journal but its socket \(path) is missing; stall entries go to stderr as plain text")
            }
        }
        self.journal = journal
        let wantsMetrics = configuration.metricsFile != nil || configuration.metricsListen != nil
        let metrics = wantsMetrics ? AgentMetrics(fingerprintsPerTarget: configuration.metricsFingerprints) : nil
        self.metrics = metrics
        if let address = configuration.metricsListen, let metrics {
            listener = try MetricsListener(address: address, render: { metrics.render() })
        } else {
            listener = nil
        }
        if let path = configuration.metricsFile {
            // Fail now on a directory that is not there or not safe to reach; a full disk later
            // only warns. It may belong to the collector (node_exporter's textfile directory).
            let directory = (path as NSString).deletingLastPathComponent
            let name = (path as NSString).lastPathComponent
            do {
                guard !name.isEmpty, name != ".", name != ".." else { throw StallAgentError.invalidArgument("not a file name") }
                metricsDirectory = (try ReportWriter(directory: directory.isEmpty ? "." : directory, requireSafeOwner: false, createMissing: false), name)
            } catch StallAgentError.reportDirectory(_, let reason) {
                throw StallAgentError.invalidArgument("--metrics-file: directory \(reason)")
            } catch {
                throw StallAgentError.invalidArgument("--metrics-file \(path): \(error)")
            }
        } else {
            metricsDirectory = nil
        }
        var slots: [Slot] = []
        var labels = Set<String>()
        for var spec in configuration.targets {
            // A pid changes with every start; the process name is what should key its metrics
            // series and fingerprint state — unless another target already has that name
            // (two workers of one program), when the pid tells them apart.
            if case .pid(let pid) = spec.selector, spec.name == nil,
                let comm = try? ProcFS.readText("/proc/\(pid)/comm", pid: pid)
            {
                let name = comm.trimmingCharacters(in: .whitespacesAndNewlines)
                spec.name = labels.contains(name) ? "\(name)-\(pid)" : name
            }
            labels.insert(spec.label)
            var options = spec.monitorOptions(base: configuration.monitor)
            options.childWaitsAreParking = spec.watchesAllProcesses
            options.firstWaitIsParking = spec.watchesAllProcesses
            options.stampsWaits = spec.watchesAllProcesses
            options.unit = spec.unitName
            // Each unit's reports apart: retention then counts per unit, and one busy unit
            // cannot push another's reports out.
            if let unit = spec.unitName {
                options.reportDirectory += "/" + ReportWriter.sanitize(unit, fallback: "unit", alsoAllowed: "@")
            }
            _ = try ReportWriter(directory: options.reportDirectory)
            slots.append(Slot(spec: spec, options: options, book: HostAgent.loadBook(spec, stateFiles: stateFiles, log: log)))
        }
        self.slots = slots
        let now = MonotonicTime.seconds()
        engine = WatchEngine(probeInterval: slots.map(\.options.probeInterval).min() ?? 0.01, start: now, seed: UInt64(getpid()))
        for slot in slots {
            if case .pid(let pid) = slot.spec.selector {
                do {
                    try attach(slot, pid: pid, at: now)
                } catch {
                    throw ServiceCapabilities.serviceError(for: error, environment: environment) ?? error
                }
            } else {
                metrics?.setTargetUp(slot.spec.label, false)
            }
        }
    }

    /// The port the metrics listener bound (useful with port 0).
    public var metricsPort: UInt16? { listener?.port }

    /// Runs until a stop is requested, `duration` passes, or every `pid` target has exited
    /// (pidfile and unit targets are waited for forever). Returns every watch's summary;
    /// throws, after finalising every watch, an error that a restart would not fix.
    public func run(duration: Double? = nil) throws -> [MonitorSummary] {
        listener?.start()
        let start = MonotonicTime.seconds()
        notifier.ready(status: statusLine())
        var stoppedBy: Int32?
        while true {
            let now = MonotonicTime.seconds()
            if StopRequest.isRequested {
                stoppedBy = StopRequest.signal
                break
            }
            if let duration, now - start >= duration { break }
            for slot in slots {
                // Only the awake: a thread asleep in its wait is left alone until it wakes.
                let (stepped, gone) = engine.step(slot.monitors, at: now)
                for monitor in gone { detach(slot, monitor, at: now) }
                if slot.done || fatal != nil { continue }
                if slot.spec.watchesAllProcesses {
                    watchFamily(slot, stepped: stepped, at: now)
                } else if slot.monitors.isEmpty, now >= slot.nextAttempt {
                    tryAttach(slot, at: now)
                }
            }
            if slots.allSatisfy(\.done) || fatal != nil { break }
            housekeeping(at: now)
            if let roundObserver, !roundObserver(now, slots.flatMap(\.monitors)) { break }
            // The loop got round every target: that is the progress the watchdog vouches for.
            notifier.progress(at: now)
            // Awake threads are probed on the round's pace; with every thread asleep, the agent
            // sleeps until one wakes or the next housekeeping second.
            engine.endRound(at: now, idleDeadline: idleDeadline(start: start, duration: duration, now: now), extra: extraWakeDescriptors)
        }
        if let fatal { notifier.status("failed: \(fatal)") }
        notifier.stopping()
        let now = MonotonicTime.seconds()
        for slot in slots {
            for monitor in slot.monitors {
                // (`detach` takes it off the engine.)
                monitor.accountIdleTime(until: now)
                monitor.stop(at: now)
                detach(slot, monitor, at: now, stoppedBy: stoppedBy, final: true)
            }
            // A whole family in one table, exited members included (issue 24).
            if slot.spec.watchesAllProcesses, !slot.summaries.isEmpty {
                log(FamilySummaryTable.render(label: slot.spec.label, summaries: slot.summaries, stoppedBySignal: stoppedBy))
            }
            let never = slot.unwatchedForDescriptors.count
            if never > 0 {
                log(
                    "stallagent: \(slot.spec.label): \(never) process\(never == 1 ? " was" : "es were") "
                        + "not watched: the agent's open-file limit (\(OpenFileLimit.soft)) was nearly reached")
            }
            if slot.watchedLate > 0 {
                log(
                    "stallagent: \(slot.spec.label): \(slot.watchedLate) process\(slot.watchedLate == 1 ? " was" : "es were") "
                        + "watched late, once descriptors were free (open-file limit \(OpenFileLimit.soft))")
            }
        }
        housekeeping(at: .infinity)
        listener?.stop()
        if let fatal { throw fatal }
        return slots.flatMap(\.summaries)
    }

    /// With every watched thread asleep: the next thing due on the clock — housekeeping and the
    /// wider family scans (each second), a target to attach to, the watchdog ping, the end.
    private func idleDeadline(start: Double, duration: Double?, now: Double) -> Double {
        var deadline = now + 1
        if let duration { deadline = min(deadline, start + duration) }
        if let due = notifier.nextPingDue { deadline = min(deadline, due) }
        for slot in slots where !slot.done && slot.monitors.isEmpty { deadline = min(deadline, max(now, slot.nextAttempt)) }
        return deadline
    }

    // MARK: Targets

    private func tryAttach(_ slot: Slot, at now: Double) {
        switch resolver.resolve(slot.spec) {
        case .running(let pid):
            do {
                try attach(slot, pid: pid, at: now)
            } catch {
                if let fatal = ServiceCapabilities.serviceError(for: error, environment: environment) {
                    self.fatal = fatal
                    return
                }
                waitMessage(slot, "cannot watch process \(pid): \(error)", at: now)
            }
        case .notRunning(let why):
            waitMessage(slot, why, at: now)
        }
    }

    /// A target watched as a whole: looks for processes not yet watched — in the unit's cgroup,
    /// or among the children of the processes watched — and attaches to them. Exited ones are
    /// let go by `detach` as their monitors see them gone.
    ///
    /// A new process is forked by one already watched, and a thread that forks has left its
    /// wait: so each round looks only where a watched thread was awake (`stepped`: its main
    /// thread's children, or the unit's `cgroup.procs`), never at a family that sleeps. The
    /// wider scans — sub-cgroups, and children forked by other threads — run once a second
    /// for the processes awake since the last one, and every `ProcessFamily.sleeperScanInterval`
    /// for all of them (a thread other than the main one forking while the main one sleeps).
    private func watchFamily(_ slot: Slot, stepped: [StallMonitor], at now: Double) {
        if slot.monitors.isEmpty, now < slot.nextAttempt { return }
        let wide = now >= slot.nextFullScan || slot.monitors.isEmpty
        if wide {
            slot.nextFullScan = now + ProcessFamily.fullScanInterval
            slot.refused = slot.refused.filter { $0.value > now }
        }
        var candidates: [Int32] = []
        switch slot.spec.selector {
        case .unit(let unit):
            guard wide || !stepped.isEmpty || slot.cgroup == nil else { return }
            if slot.cgroup == nil {
                // Searching the cgroup tree is the costly part: once a second at most.
                guard wide else { return }
                switch resolver.locateUnit(unit) {
                case .noHierarchy:
                    // Only systemctl can name the unit's process: its main one.
                    if slot.monitors.isEmpty { tryAttach(slot, at: now) }
                    if !slot.monitors.isEmpty, !slot.saidMainOnly {
                        slot.saidMainOnly = true
                        log("stallagent: \(slot.spec.label): no cgroup hierarchy is readable; watching the unit's main process only")
                    }
                    return
                case .absent(let why):
                    if slot.monitors.isEmpty { waitMessage(slot, why, at: now) }
                    return
                case .cgroup(let path):
                    slot.cgroup = path
                }
            }
            // A cgroup that cannot be read has gone with its unit; the next look says why.
            guard let cgroup = slot.cgroup, let pids = slot.family.cgroupProcesses(cgroup, recursive: wide) else {
                slot.cgroup = nil
                if slot.monitors.isEmpty { slot.nextAttempt = now }
                return
            }
            candidates = pids
            if slot.monitors.isEmpty, let main = UnitCgroups.mainProcess(of: UnitCgroups.members(of: cgroup)) {
                candidates.insert(main, at: 0)
            }
        case .pid, .pidfile:
            for monitor in stepped { slot.awakeSinceWideScan.insert(monitor.inspector.pid) }
            if wide {
                // Processes refused for want of descriptors are looked for at every wide scan
                // (each second) until watched: their parent may sleep, and the descriptors come
                // back as the watched ones fall asleep.
                let everyone = now >= slot.nextSleeperScan || !slot.unwatchedForDescriptors.isEmpty
                if everyone { slot.nextSleeperScan = now + ProcessFamily.sleeperScanInterval }
                for monitor in slot.monitors where everyone || slot.awakeSinceWideScan.contains(monitor.inspector.pid) {
                    candidates += slot.family.children(of: monitor.inspector.pid, allThreads: true)
                }
                slot.awakeSinceWideScan = []
            } else {
                for monitor in stepped {
                    candidates += slot.family.children(of: monitor.inspector.pid, allThreads: false)
                }
            }
        }
        var watched = Set(slot.monitors.map { $0.inspector.pid })
        let own = getpid()
        var unwatchable = false
        for pid in candidates where pid != own && !watched.contains(pid) {
            if slot.refused[pid] != nil {
                unwatchable = true
                continue
            }
            guard TargetResolver.isLiveProcess(pid) else { continue }
            if OpenFileLimit.nearlyExhausted(reserve: OpenFileLimit.watchReserve) {
                slot.refused[pid] = now + configuration.retryInterval
                unwatchable = true
                noteDescriptorRefusal(slot, pid: pid)
                continue
            }
            watched.insert(pid)
            do {
                try attach(slot, pid: pid, at: now)
            } catch {
                if let fatal = ServiceCapabilities.serviceError(for: error, environment: environment) {
                    self.fatal = fatal
                    return
                }
                // A Go program stays one: looked at again only as rarely as a reused pid
                // allows, not every retry interval (each look reads its maps and modules).
                var goProgram = false
                if case StallAgentError.goProgram = error { goProgram = true }
                slot.refused[pid] = now + (goProgram ? Self.goProgramRetryInterval : configuration.retryInterval)
                unwatchable = true
                // Gone meanwhile is no news; anything else is said once per process and reason.
                if TargetResolver.isLiveProcess(pid), slot.loggedRefusals.insert("\(pid) \(error)").inserted {
                    log(
                        "stallagent: \(slot.spec.label): cannot watch process \(pid): \(error)"
                            + (goProgram ? "" : "; trying again every \(Format.seconds(configuration.retryInterval))")
                    )
                }
            }
        }
        if slot.monitors.isEmpty, case .unit(let unit) = slot.spec.selector {
            if unwatchable {
                slot.nextAttempt = now + configuration.retryInterval
            } else {
                waitMessage(slot, TargetResolver.noProcesses(unit), at: now)
            }
        }
    }

    static let goProgramRetryInterval = 300.0

    /// Names each process left unwatched for want of descriptors, once, the first ten of
    /// them, then counts (the summary is said again when the count grows tenfold).
    private func noteDescriptorRefusal(_ slot: Slot, pid: Int32) {
        guard slot.loggedRefusals.insert("\(pid) descriptors").inserted else { return }
        slot.unwatchedForDescriptors.insert(pid)
        let count = slot.descriptorRefusals
        let limit = OpenFileLimit.soft
        if count <= 10 {
            let name = (try? ProcFS.readText("/proc/\(pid)/comm", pid: pid))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
            log(
                "stallagent: \(slot.spec.label): not watching \(name.terminalSafe) [\(pid)]: the agent's open-file limit "
                    + "(\(limit)) is nearly reached; raise LimitNOFILE= (the shipped units set 65536) or ulimit -n")
        } else if count == 11 || count == 100 || count == 1000 || count == 10_000 {
            log("stallagent: \(slot.spec.label): \(count) processes not watched so far: the agent's open-file limit (\(limit)) is nearly reached")
        }
    }

    /// Logs why a target is not watched — once per distinct reason, not once per retry — and
    /// backs off to the retry interval.
    private func waitMessage(_ slot: Slot, _ why: String, at now: Double) {
        if slot.lastWaitMessage != why {
            slot.lastWaitMessage = why
            log("stallagent: \(slot.spec.label): \(why); waiting for it (checking every \(Format.seconds(configuration.retryInterval)))")
            notifier.status(statusLine())
        }
        slot.nextAttempt = now + configuration.retryInterval
    }

    private func attach(_ slot: Slot, pid: Int32, at now: Double) throws {
        let monitor = try StallMonitor(pid: pid, options: slot.options, fingerprints: slot.book, log: log)
        monitor.stallEvents = { [unowned self, unowned slot, unowned monitor] event in
            self.handle(event, slot: slot, monitor: monitor)
        }
        monitor.begin(at: now)
        slot.monitors.append(monitor)
        engine.add(monitor)
        if slot.unwatchedForDescriptors.remove(pid) != nil { slot.watchedLate += 1 }
        slot.lastWaitMessage = nil
        let origin: String
        switch slot.spec.selector {
        case .pid: origin = ""
        case .pidfile(let path): origin = " (pidfile \(path))"
        case .unit(let unit): origin = " (unit \(unit))"
        }
        log("stallagent: watching \(monitor.inspector.name.terminalSafe) [\(pid)]'s main thread\(origin); reports → \(monitor.summary.reportDirectory)")
        metrics?.setTargetUp(slot.spec.label, true)
        metrics?.recordAttach(target: slot.spec.label)
        notifier.status(statusLine())
    }

    private func detach(_ slot: Slot, _ monitor: StallMonitor, at now: Double, stoppedBy: Int32? = nil, final: Bool = false) {
        engine.remove(monitor)
        var summary = monitor.end()
        summary.stoppedBySignal = stoppedBy
        slot.summaries.append(summary)
        slot.book = monitor.fingerprints
        saveBook(slot)
        updateMetrics(slot, monitor)
        metrics?.forget(target: slot.spec.label, monitorKey: String(monitor.inspector.pid))
        slot.monitors.removeAll { $0 === monitor }
        slot.refused[monitor.inspector.pid] = nil
        slot.family.forget(pid: monitor.inspector.pid)
        metrics?.setTargetUp(slot.spec.label, !slot.monitors.isEmpty)
        if !slot.spec.watchesAllProcesses {
            log(summary.render())
        } else if !final {
            log(summary.renderExit())
        }
        if summary.targetExited, slot.spec.watchesAllProcesses {
            // A worker that exits is let go; the target ends (or waits) when none is left.
            if slot.monitors.isEmpty {
                if slot.spec.followsRestarts {
                    log("stallagent: \(slot.spec.label): no process left; waiting for the next one")
                    slot.nextAttempt = now + min(0.2, configuration.retryInterval)
                } else {
                    slot.done = true
                }
            }
        } else if summary.targetExited {
            if slot.spec.followsRestarts {
                log("stallagent: \(slot.spec.label): \(summary.name.terminalSafe) [\(summary.pid)] exited; waiting for its next main process")
                slot.nextAttempt = now + min(0.2, configuration.retryInterval)
            } else {
                slot.done = true
            }
        }
        notifier.status(statusLine())
    }

    // MARK: Stall events

    private func handle(_ event: StallMonitorEvent, slot: Slot, monitor: StallMonitor) {
        defer { stallObserver?(event, monitor) }
        switch event {
        case .detected(let report, let path, let message):
            shareBook(slot, from: monitor)
            metrics?.stallOngoing(
                target: slot.spec.label, key: "\(monitor.inspector.pid):\(report.id)", reason: report.deadlock ? .deadlock : report.reason)
            saveBook(slot)
            emit(event, slot: slot, monitor: monitor, text: "stallagent: " + message + (path.map { " → \($0)" } ?? ""))
        case .ended(let stall, let report, let message):
            shareBook(slot, from: monitor)
            slot.stalls += 1
            metrics?.stallFinished(target: slot.spec.label, key: "\(monitor.inspector.pid):\(report.id)")
            metrics?.recordStall(
                target: slot.spec.label, reason: stall.reason, duration: stall.duration, fingerprint: report.recurrence.fingerprint,
                culprit: report.culpritName)
            emit(event, slot: slot, monitor: monitor, text: message)
            notifier.status(statusLine())
            nextRetention = 0
            nextMetricsWrite = 0
        }
    }

    /// The processes of one target share their fingerprint state: workers of one program stall
    /// on the same stacks, and the rate limit and annealing hold for the target.
    private func shareBook(_ slot: Slot, from monitor: StallMonitor) {
        slot.book = monitor.fingerprints
        for other in slot.monitors where other !== monitor { other.fingerprints = slot.book }
    }

    private func emit(_ event: StallMonitorEvent, slot: Slot, monitor: StallMonitor, text: String) {
        if let journal {
            do {
                try journal.send(StallJournalEntry.fields(for: event, target: (slot.spec.label, slot.spec.unitName), processName: monitor.inspector.name))
                return
            } catch {
                log("stallagent: warning: journal entry not sent (\(error)); logging it as text")
            }
        }
        if !slot.options.quiet { log(text) }
    }

    // MARK: Housekeeping

    private func housekeeping(at now: Double) {
        // What each process of a family is becomes known as it shows it (the notifier sends
        // only a changed line).
        if now != .infinity, now >= nextStatusUpdate, slots.contains(where: \.spec.watchesAllProcesses) {
            notifier.status(statusLine())
            nextStatusUpdate = now + 1
        }
        if let metrics, now >= nextMetricsUpdate {
            for slot in slots { for monitor in slot.monitors { updateMetrics(slot, monitor) } }
            metrics.touch()
            nextMetricsUpdate = now == .infinity ? .infinity : now + 1
        }
        if let (directory, name) = metricsDirectory, let metrics, now >= nextMetricsWrite {
            do {
                try directory.replaceFile(named: name, with: Array(metrics.render().utf8))
                warnedMetricsFile = false
            } catch {
                if !warnedMetricsFile { log("stallagent: warning: metrics file not written: \(error)") }
                warnedMetricsFile = true
            }
            nextMetricsWrite = now + configuration.metricsInterval
        }
        if !configuration.retention.isUnlimited, now >= nextRetention {
            // The limits hold per directory: each unit's, and the shared one of other targets.
            for directory in Set(slots.map(\.options.reportDirectory)).sorted() {
                let open = Set(slots.filter { $0.options.reportDirectory == directory }.flatMap { $0.monitors.compactMap(\.openReportStem) })
                let outcome = configuration.retention.apply(to: directory, protected: open)
                if outcome.removedReports > 0 {
                    log(
                        "stallagent: retention: removed \(outcome.removedReports) old report(s) from \(directory), \(outcome.removedBytes) bytes; \(outcome.keptReports) kept"
                    )
                }
            }
            nextRetention = now + 60
        }
    }

    private func updateMetrics(_ slot: Slot, _ monitor: StallMonitor) {
        guard let metrics else { return }
        monitor.accountIdleTime(until: MonotonicTime.seconds())
        metrics.update(
            target: slot.spec.label, monitorKey: String(monitor.inspector.pid), stateSeconds: monitor.stateSeconds,
            pauseSeconds: monitor.pauseSecondsTotal, capturesWithStop: monitor.summary.capturesWithStop,
            capturesWithoutStop: monitor.capturesWithoutStop)
        metrics.updateLoop(
            target: slot.spec.label, monitorKey: String(monitor.inspector.pid), turns: monitor.loopTurnCount,
            evidence: monitor.loopTurnEvidence, turnLengths: monitor.drainTurnLengths())
    }

    /// STATUS= for `systemctl status`: what is watched and how many stalls so far.
    func statusLine() -> String {
        let parts = slots.map { slot -> String in
            // A family says what each process is (issue 24): "1 supervisor, 4 loop".
            if slot.spec.watchesAllProcesses, !slot.monitors.isEmpty {
                var counts: [ProcessKind: Int] = [:]
                for monitor in slot.monitors { counts[monitor.kind, default: 0] += 1 }
                let kinds = ProcessKind.allCases.compactMap { kind in counts[kind].map { "\($0) \(kind.rawValue)" } }
                let pids = slot.monitors.prefix(4).map { "\($0.inspector.pid) \($0.kind.rawValue)" }
                let more = slot.monitors.count > 4 ? " and \(slot.monitors.count - 4) more" : ""
                return "\(slot.spec.label) (\(kinds.joined(separator: ", "))) [\(pids.joined(separator: ", "))\(more)]"
            }
            let pids = slot.monitors.map { String($0.inspector.pid) }
            if pids.count > 4 { return "\(slot.spec.label) [\(pids.prefix(3).joined(separator: ", ")) and \(pids.count - 3) more]" }
            if !pids.isEmpty { return "\(slot.spec.label) [\(pids.joined(separator: ", "))]" }
            return "\(slot.spec.label) (waiting)"
        }
        let stalls = slots.reduce(0) { $0 + $1.stalls }
        return "watching " + parts.joined(separator: ", ") + "; \(stalls) stall\(stalls == 1 ? "" : "s")"
    }

    // MARK: Fingerprint state

    static func bookName(_ spec: TargetSpec) -> String { ReportWriter.sanitize(spec.label, fallback: "target") + ".json" }

    static func loadBook(_ spec: TargetSpec, stateFiles: ReportWriter?, log: (String) -> Void) -> StallFingerprintBook {
        guard let stateFiles else { return StallFingerprintBook() }
        let path = stateFiles.directory + "/" + bookName(spec)
        guard let data = stateFiles.readFile(named: bookName(spec), maxBytes: 64 << 20) else { return StallFingerprintBook() }
        do {
            let book = try JSONDecoder().decode(StallFingerprintBook.self, from: Data(data))
            guard book.formatVersion == StallFingerprintBook.currentFormatVersion else {
                log("stallagent: warning: \(path) has format \(book.formatVersion); starting a fresh fingerprint state")
                return StallFingerprintBook()
            }
            return book
        } catch {
            log("stallagent: warning: \(path) is unreadable (\(error)); starting a fresh fingerprint state")
            return StallFingerprintBook()
        }
    }

    private func saveBook(_ slot: Slot) {
        guard let stateFiles else { return }
        let name = HostAgent.bookName(slot.spec)
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try stateFiles.replaceFile(named: name, with: Array(try encoder.encode(slot.book)))
        } catch {
            log("stallagent: warning: fingerprint state not saved to \(stateFiles.directory)/\(name): \(error)")
        }
    }
}
