import ArgumentParser
import Foundation
import StallDetection
import StallHost
import StallMonitoring
import StallProc
import StallViews

#if canImport(Glibc)
import Glibc
#endif

/// `stallagent top`: the watch of `--pid`, drawn as a table refreshed every second instead of
/// lines on stderr. Reports are written as by `watch`.
struct Top: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "top",
        abstract: "Watch processes live: one line each, refreshed every second (like top).",
        discussion: """
            Watches each --pid exactly as `stallagent --pid` does (reports go to --report-dir) and \
            shows, once a second: the state (the process's kind, or the stall in progress with \
            its reason and age), loop turns per second and the share of time busy over the last \
            second, the longest turn in it and ever, and the stalls so far. q or Ctrl-C quits \
            (open reports are finalised first); it also ends when every process has exited.

            --follow-children (with --pid) and --unit watch a whole family as `stallagent --pid \
            P --follow-children` and `stallagent --unit` do: a line per process, those that \
            appear added as they are attached, those that exit shown as exited for 10 s.

            Examples: stallagent top --pid 1234 --pid 5678
                      stallagent top --unit postgresql@15-main.service
            """)

    @Option(name: .long, help: ArgumentHelp("A process to watch (repeatable).", valueName: "pid"))
    var pid: [Int32] = []

    @Flag(help: "With --pid: also watch every descendant of the process, those it forks later included.")
    var followChildren = false

    @Option(help: ArgumentHelp("A systemd unit to watch, every process of it (e.g. nginx.service).", valueName: "name"))
    var unit: String?

    @OptionGroup var watch: WatchOptions

    func validate() throws {
        guard !pid.isEmpty || unit != nil else { throw ValidationError("top needs at least one --pid, or --unit") }
        if unit != nil, !pid.isEmpty { throw ValidationError("give --pid or --unit, not both") }
        if followChildren, pid.isEmpty { throw ValidationError("--follow-children goes with --pid (a --unit is watched as a whole already)") }
        if let unit, !TargetSpec.isValidUnitName(unit) {
            throw ValidationError("--unit: '\(unit)' is not a unit name (e.g. nginx.service)")
        }
    }

    func run() throws {
        try runReportingErrors {
            try StopRequest.install()
            var options = try watch.monitorOptions()
            // The screen is the output: the monitors' own lines would scroll it away.
            options.quiet = true
            try runOnEngine(options: options)
        }
    }

    func title(at elapsed: Double, processes count: Int) -> String {
        let scope = unit.map { "\(TargetSpec.normalizedUnitName($0)) · " } ?? ""
        return "stallagent top · \(scope)\(count) process\(count == 1 ? "" : "es") · \(Int(elapsed)) s"
    }

    /// The processes, families or unit, watched by the service's engine (`HostAgent`) as
    /// `stallagent --pid`/`--unit` watch them: it attaches to new processes as they appear and
    /// sleeps while every thread sleeps; the screen is drawn from its rounds, at most once a
    /// second.
    private func runOnEngine(options: MonitorOptions) throws {
        var configuration = AgentConfiguration()
        configuration.monitor = options
        if let unit {
            configuration.targets = [TargetSpec(selector: .unit(TargetSpec.normalizedUnitName(unit)), name: nil)]
        } else {
            var seen = Set<Int32>()
            configuration.targets = pid.filter { seen.insert($0).inserted }.map {
                var target = TargetSpec(selector: .pid($0), name: nil)
                target.processes = followChildren ? .all : nil
                return target
            }
        }
        var said: [String] = []
        let agent = try HostAgent(configuration: configuration, log: { said.append($0) })
        let screen = TopTerminal()
        var entries: [Int32: Entry] = [:]
        // An exited process stays on the screen this long, then makes room.
        let keepExited = 10.0
        var exitedAt: [Int32: Double] = [:]
        agent.stallObserver = { event, monitor in
            guard let entry = entries[monitor.inspector.pid], entry.monitor === monitor else { return }
            switch event {
            case .detected(let report, _, _): entry.open = (report.reason.name, MonotonicTime.seconds() - report.span.durationSeconds)
            case .ended: entry.open = nil
            }
        }
        agent.extraWakeDescriptors = [STDIN_FILENO]
        let start = MonotonicTime.seconds()
        var nextDraw = start
        var lastRows: [TopScreen.Row] = []
        agent.roundObserver = { now, monitors in
            if screen.quitPressed() { return false }
            guard now >= nextDraw else { return true }
            nextDraw = max(nextDraw + 1, now)
            let live = Set(monitors.map { $0.inspector.pid })
            for monitor in monitors where entries[monitor.inspector.pid]?.monitor !== monitor {
                let entry = Entry()
                entry.monitor = monitor
                entry.mark(at: now)
                entries[monitor.inspector.pid] = entry
                exitedAt[monitor.inspector.pid] = nil
            }
            for pid in entries.keys where !live.contains(pid) {
                if exitedAt[pid] == nil { exitedAt[pid] = now }
                if now - exitedAt[pid]! > keepExited {
                    entries[pid] = nil
                    exitedAt[pid] = nil
                }
            }
            lastRows = entries.keys.sorted().compactMap { pid in
                guard let entry = entries[pid] else { return nil }
                if !live.contains(pid) { entry.gone = true }
                return entry.row(at: now)
            }
            screen.draw(TopScreen.lines(lastRows, title: title(at: now - start, processes: live.count), width: screen.columns))
            return true
        }
        screen.begin()
        defer { screen.end() }
        let result = Result { try agent.run(duration: options.duration) }
        screen.end()
        // What was on the screen last stays in the terminal, then what the agent said (the
        // family's table among it).
        let last = TopScreen.lines(lastRows, title: title(at: MonotonicTime.seconds() - start, processes: lastRows.count), width: screen.columns)
        FileHandleOutput.standardOutput(last.dropLast().joined(separator: "\n") + "\n")
        for line in said where !line.hasPrefix("stallagent: watching ") { FileHandleOutput.standardError(line + "\n") }
        _ = try result.get()
    }

    /// One watched process and what the last refresh saw of it.
    final class Entry {
        var monitor: StallMonitor!
        /// No longer in the family's watch (exited, or left the unit).
        var gone = false
        var open: (reason: String, since: Double)?
        private var lastTurns: UInt64 = 0
        private var lastBusy = 0.0
        private var lastTime = 0.0

        func mark(at now: Double) {
            lastTurns = monitor.loopTurnCount
            lastBusy = busySeconds
            lastTime = now
        }

        var busySeconds: Double { monitor.stateSeconds.filter { $0.key.isBusy }.values.reduce(0, +) }

        func row(at now: Double) -> TopScreen.Row {
            let span = max(now - lastTime, 0.001)
            let turns = monitor.loopTurnCount
            let busy = busySeconds
            let recent = monitor.drainTurnLengths().max() ?? 0
            let kind = monitor.kind
            let state: String
            if gone || monitor.finished {
                state = gone || monitor.summary.targetExited ? "exited" : "not watched"
            } else if let open {
                state = "\(open.reason) \(String(format: "%.1fs", now - open.since))"
            } else {
                state = kind.rawValue
            }
            let row = TopScreen.Row(
                pid: monitor.inspector.pid, name: monitor.inspector.name, state: state, stalled: open != nil && !monitor.finished,
                turnsPerSecond: kind == .loop ? Double(turns &- lastTurns) / span : nil,
                busyPercent: min(100, max(0, 100 * (busy - lastBusy) / span)), longestRecent: recent,
                longestEver: monitor.turnLengths.longest, stalls: monitor.summary.stallCount)
            lastTurns = turns
            lastBusy = busy
            lastTime = now
            return row
        }
    }
}
