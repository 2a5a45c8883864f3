import StallDetection

/// What a watch found, for the exit summary and for wrappers that decide an exit status.
public struct MonitorSummary: Sendable {
    public struct Stall: Sendable {
        public var id: Int
        public var reason: StallReason
        public var phase: StallPhase
        public var duration: Double
        /// CLOCK_MONOTONIC seconds, comparable with other processes' monotonic clocks.
        public var startMonotonic: Double
        public var endMonotonic: Double
        public var topFunction: String
        public var heaviestFunctions: [String]
        public var deadlock: Bool
        public var lockOwnerName: String?
        /// When the first (ongoing) report reached the disk, monotonic seconds.
        public var firstWrittenMonotonic: Double?
        public var reportPath: String?
        public var occurrence: Int
        public var terminated: Bool
    }

    public var pid: Int32
    public var name: String
    /// What the process showed itself to be (see `ProcessKind`).
    public var kind: ProcessKind = .busy
    public var watchedSeconds: Double
    /// The stalls kept for the summary: all of them up to `maxKeptStalls`, then the longest
    /// (a watch of months must not grow by a stall's worth of memory per stall).
    public var stalls: [Stall] = []
    /// Every stall, counted even when it is no longer kept in `stalls`.
    public private(set) var stallCount = 0
    public private(set) var countsByReason: [String: Int] = [:]
    public static let maxKeptStalls = 100
    public var targetExited = false
    /// The main thread exited (pthread_exit) while this many other threads run on: the
    /// process lives, its main thread is gone (issue 27).
    public var mainThreadExitedLeaving: Int?
    /// The process exec'd a Go program, which is not watched (`StallAgentError.goProgram`).
    public var execdGoProgram = false
    public var stoppedBySignal: Int32?
    public var reportDirectory: String
    public var samples = 0
    public var capturesWithStop = 0
    /// Samples of a running thread not taken: early in a busy stretch, with no kernel sample
    /// to take without a stop (`StallMonitor.sample`).
    public var samplesPutOff = 0
    public var agentCPUSeconds = 0.0
    /// The agent's own age when the summary was made: its CPU share is of that, not of this
    /// process's watch (in a family, a worker watched 0.05 s read "634 % of a core").
    public var agentElapsedSeconds = 0.0
    public var peakResidentBytes = 0
    /// Loop health, the counterpart of a UI's frame rate: turns of the event loop (exact with
    /// the kernel counter or loop probe, a lower bound with the stack rule) and time busy.
    public var loopTurnEvidence: LoopTurnEvidence?
    public var loopTurns: UInt64 = 0
    public var busySeconds = 0.0
    /// The longest busy turn seen (stalls included).
    public var longestTurn = 0.0

    /// Counts `stall` and keeps it if it is among the `maxKeptStalls` longest.
    public mutating func record(_ stall: Stall) {
        stallCount += 1
        countsByReason[stall.reason.name, default: 0] += 1
        stalls.append(stall)
        if stalls.count > Self.maxKeptStalls, let shortest = stalls.indices.min(by: { stalls[$0].duration < stalls[$1].duration }) {
            stalls.remove(at: shortest)
        }
    }

    /// Turns per second and busy share, when the process has a loop to count them by.
    var loopHealth: (turnsPerSecond: Double, busyPercent: Double)? {
        guard kind == .loop, watchedSeconds > 0 else { return nil }
        return (Double(loopTurns) / watchedSeconds, 100 * min(1, busySeconds / watchedSeconds))
    }

    /// The worst stall, as the summaries print it.
    var worstLine: String? {
        guard let worst = stalls.max(by: { $0.duration < $1.duration }) else { return nil }
        return "#\(worst.id) \(worst.reason.hexCode) \(worst.reason.name) \(Format.seconds(worst.duration)) in \(worst.topFunction.terminalSafe)"
    }

    /// One line for a member of a watched family that exits while the rest is still watched:
    /// the family's table at the end lists it again.
    public func renderExit() -> String {
        let total = max(stallCount, stalls.count)
        var line = "stallagent: \(name.terminalSafe) [\(pid)] (\(kind.rawValue)) exited after \(Format.seconds(watchedSeconds)): "
        line += total == 0 ? "no stalls" : "\(total) stall\(total == 1 ? "" : "s"), worst \(worstLine ?? "?")"
        return line
    }

    /// The few lines printed when the watch ends.
    public func render() -> String {
        var lines: [String] = []
        let total = max(stallCount, stalls.count)
        let ending =
            mainThreadExitedLeaving.map {
                "until its main thread exited (pthread_exit), \($0) other thread\($0 == 1 ? "" : "s") running on"
            } ?? (targetExited ? "until it exited" : (stoppedBySignal != nil ? "until interrupted" : ""))
        lines.append(
            "stallagent: watched \(name.terminalSafe) [\(pid)] for \(Format.seconds(watchedSeconds))\(ending.isEmpty ? "" : " " + ending): "
                + (total == 0 ? "no stalls" : "\(total) stall\(total == 1 ? "" : "s")"))
        if !stalls.isEmpty {
            var byReason = countsByReason
            if stallCount < stalls.count {
                byReason = [:]
                for stall in stalls { byReason[stall.reason.name, default: 0] += 1 }
            }
            lines.append("  by reason: " + byReason.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            if let worstLine { lines.append("  worst: " + worstLine) }
            for stall in stalls {
                lines.append(
                    "  #\(stall.id) \(stall.reason.hexCode) \(stall.reason.name.padding(toLength: 8, withPad: " ", startingAt: 0)) \(Format.seconds(stall.duration).padding(toLength: 8, withPad: " ", startingAt: 0)) \(stall.topFunction)"
                        + (stall.reportPath.map { "  \($0)" }
                            ?? (stall.occurrence > 1
                                ? "  (same as an earlier stall; seen \(stall.occurrence)×, report not rewritten)"
                                : "  (report could not be written; see the warning above)"))
                )
            }
            if total > stalls.count { lines.append("  … \(total - stalls.count) shorter stalls not listed") }
        }
        if let evidence = loopTurnEvidence, watchedSeconds > 0 {
            let busy = 100 * min(1, busySeconds / watchedSeconds)
            lines.append(
                String(
                    format: "  loop: %@%llu turns (%.1f/s), busy %.1f %% of the time, longest turn %.2f s; turns from the %@",
                    evidence == .stackRule ? "≥ " : "", loopTurns, Double(loopTurns) / watchedSeconds, busy,
                    longestTurn, evidence.rawValue))
        }
        lines.append("  reports: \(reportDirectory)")
        lines.append(agentLine(samples: samples, capturesWithStop: capturesWithStop, watchedSeconds: watchedSeconds))
        return lines.joined(separator: "\n")
    }

    /// The agent's own figures (its CPU and peak RSS are the agent's, whichever process this
    /// summary is of), with the sample counts given.
    func agentLine(samples: Int, capturesWithStop: Int, watchedSeconds: Double) -> String {
        let base = max(agentElapsedSeconds, watchedSeconds)
        return String(
            format: "  agent: %d samples, %d with a ptrace stop, CPU %.2f s (%.2f %% of a core), peak RSS %.1f MB",
            samples, capturesWithStop, agentCPUSeconds, base > 0 ? 100 * agentCPUSeconds / base : 0,
            Double(peakResidentBytes) / 1_048_576)
    }
}

package enum Format {
    package static func seconds(_ s: Double) -> String { String(format: "%.2f s", s) }
}
