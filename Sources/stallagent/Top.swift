import ArgumentParser
import Foundation
import StallDetection
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

            Example: stallagent top --pid 1234 --pid 5678
            """)

    @Option(name: .long, help: ArgumentHelp("A process to watch (repeatable).", valueName: "pid"))
    var pid: [Int32] = []

    @OptionGroup var watch: WatchOptions

    func validate() throws {
        guard !pid.isEmpty else { throw ValidationError("top needs at least one --pid") }
    }

    func run() throws {
        try runReportingErrors {
            try StopRequest.install()
            var options = try watch.monitorOptions()
            // The screen is the output: the monitors' own lines would scroll it away.
            options.quiet = true
            let screen = TopTerminal()
            var entries: [Entry] = []
            for target in pid {
                let entry = Entry()
                entry.monitor = try StallMonitor(pid: target, options: options, log: { entry.lastMessage = $0 })
                entry.monitor.stallEvents = { event in
                    switch event {
                    case .detected(let report, _, _): entry.open = (report.reason.name, MonotonicTime.seconds() - report.durationSeconds)
                    case .ended: entry.open = nil
                    }
                }
                entries.append(entry)
            }
            let start = MonotonicTime.seconds()
            for entry in entries {
                entry.monitor.begin(at: start)
                entry.mark(at: start)
            }
            screen.begin()
            defer { screen.end() }
            var nextDraw = start
            var rows: [TopScreen.Row] = []
            let probe = max(0.001, options.probeInterval)
            while true {
                let now = MonotonicTime.seconds()
                let quit = StopRequest.isRequested || screen.quitPressed()
                if quit || entries.allSatisfy(\.monitor.finished) || options.duration.map({ now - start >= $0 }) == true {
                    for entry in entries where !entry.monitor.finished { entry.monitor.stop(at: now) }
                    break
                }
                for entry in entries where !entry.monitor.finished { entry.monitor.step(at: now) }
                if now >= nextDraw {
                    rows = entries.map { $0.row(at: now) }
                    screen.draw(TopScreen.lines(rows, title: title(at: now - start), width: screen.columns))
                    nextDraw += 1
                    if nextDraw < now { nextDraw = now + 1 }
                }
                let wait = probe - (MonotonicTime.seconds() - now)
                if wait > 0 { usleep(useconds_t(wait * 1e6)) }
            }
            for entry in entries { _ = entry.monitor.end() }
            screen.end()
            // What was on the screen last stays in the terminal.
            let last = TopScreen.lines(
                entries.map { $0.row(at: MonotonicTime.seconds()) }, title: title(at: MonotonicTime.seconds() - start), width: screen.columns)
            FileHandleOutput.standardOutput(last.dropLast().joined(separator: "\n") + "\n")
        }
    }

    func title(at elapsed: Double) -> String {
        "stallagent top · \(pid.count) process\(pid.count == 1 ? "" : "es") · \(Int(elapsed)) s"
    }

    /// One watched process and what the last refresh saw of it.
    final class Entry {
        var monitor: StallMonitor!
        var lastMessage = ""
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
            if monitor.finished {
                state = monitor.summary.targetExited ? "exited" : "not watched"
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
