import Foundation
import Prometheus

import StallDetection
import StallMonitoring
#if canImport(Glibc)
import Glibc
#endif

/// The agent's Prometheus metrics (text exposition format), kept in a swift-prometheus
/// registry so the file writer and the HTTP listener render the same numbers.
///
/// Targets are labelled by their configured name (unit name, pidfile, process name), never
/// by pid: a service restarting every hour must not create a new series each time.
// Unchecked: every `var` is read and written only inside `lock.withLock`; the registry and its metrics are Sendable.
public final class AgentMetrics: @unchecked Sendable {
    public static let stallDurationBuckets: [Double] = [0.25, 0.5, 1, 2, 5, 10, 30, 60, 300]
    public static let version = "0.5.0"

    public let registry = PrometheusCollectorRegistry()
    private let lastUpdate: Gauge
    private let agentCPU: Counter
    private let agentResident: Gauge
    private var lastCPUSeconds = 0.0
    private var stateTotals: [String: [ThreadActivity: Double]] = [:]
    private var pauseTotals: [String: (seconds: Double, stops: Int, nonStop: Int)] = [:]
    private var loopTotals: [String: UInt64] = [:]
    /// Per target: the fingerprints with a series of their own, most recent last.
    private var fingerprintSeries: [String: [FingerprintSeries]] = [:]
    /// Per target: stalls going on now, by "pid:stall id", with their reason.
    private var ongoing: [String: [String: StallReason]] = [:]
    private var health: [String: LoopHealthWindow] = [:]
    /// How many fingerprints per target keep a series of their own (`--metrics-fingerprints`);
    /// the least recent beyond it are folded into `fingerprint="other"`.
    public let fingerprintsPerTarget: Int
    private let lock = NSLock()

    struct FingerprintSeries {
        var fingerprint: String
        var count: Int
        var counter: Counter
    }

    public init(fingerprintsPerTarget: Int = 20) {
        self.fingerprintsPerTarget = max(1, fingerprintsPerTarget)
        registry.makeGauge(
            descriptor: AgentMetrics.descriptor("build", "info", "Always 1; the labels say which stallagent is running."),
            labels: [("version", AgentMetrics.version)]
        ).set(to: 1)
        lastUpdate = registry.makeGauge(
            descriptor: AgentMetrics.descriptor(
                "last_update_timestamp", "seconds", "Unix time of the last metrics update; stale means the agent is stuck or gone."))
        agentCPU = registry.makeCounter(
            descriptor: AgentMetrics.descriptor("agent_cpu", "seconds_total", "CPU time used by the agent itself."))
        agentResident = registry.makeGauge(
            descriptor: AgentMetrics.descriptor("agent_resident", "bytes", "The agent's resident memory."))
    }

    /// Counts a finished stall, and under its fingerprint, the name that groups one bug
    /// across hosts and restarts. Cardinality stays bounded: each target keeps the
    /// `fingerprintsPerTarget` most recent fingerprints as series of their own; the least
    /// recent one makes room for a new one, and its count moves to `fingerprint="other"`, so
    /// the sum over a target's series still counts every stall.
    public func recordStall(target: String, reason: StallReason, duration: Double, fingerprint: String? = nil, culprit: String? = nil) {
        lock.withLock {
            if let fingerprint { countFingerprint(target: target, fingerprint: fingerprint, reason: reason, culprit: culprit ?? "?") }
            registry.makeCounter(
                descriptor: AgentMetrics.descriptor("stalls", "total", "Main-thread stalls longer than the threshold, by target and reason code."),
                labels: [("target", target), ("reason", reason.name), ("code", reason.hexCode)]
            ).increment()
            registry.makeValueHistogram(
                descriptor: AgentMetrics.descriptor("stall_duration", "seconds", "Duration of finished stalls."), labels: [("target", target)],
                buckets: AgentMetrics.stallDurationBuckets
            ).record(duration)
        }
    }

    private static var fingerprintDescriptor: MetricNameDescriptor {
        AgentMetrics.descriptor(
            "stall_fingerprint", "total",
            "Finished stalls by fingerprint (the same code stalling the same way, on any host), reason and culprit; the least recent fingerprints beyond --metrics-fingerprints per target are counted as fingerprint=\"other\"."
        )
    }

    private func countFingerprint(target: String, fingerprint: String, reason: StallReason, culprit: String) {
        var series = fingerprintSeries[target] ?? []
        if let index = series.firstIndex(where: { $0.fingerprint == fingerprint }) {
            var entry = series.remove(at: index)
            entry.counter.increment()
            entry.count += 1
            series.append(entry)
            fingerprintSeries[target] = series
            return
        }
        if series.count >= fingerprintsPerTarget {
            let evicted = series.removeFirst()
            registry.unregisterCounter(evicted.counter)
            registry.makeCounter(
                descriptor: Self.fingerprintDescriptor,
                labels: [("target", target), ("fingerprint", "other"), ("reason", "other"), ("culprit", "other")]
            ).increment(by: Int64(evicted.count))
        }
        // A culprit is a function name: long C++ signatures are cut, it is a label, not a report.
        let labels = [("target", target), ("fingerprint", fingerprint), ("reason", reason.name), ("culprit", String(culprit.prefix(120)))]
        let counter = registry.makeCounter(descriptor: Self.fingerprintDescriptor, labels: labels)
        counter.increment()
        series.append(FingerprintSeries(fingerprint: fingerprint, count: 1, counter: counter))
        fingerprintSeries[target] = series
    }

    /// A stall crossed the threshold (`key`: the process and its stall id), or was revised
    /// (a lock wait found to be a deadlock): `stallagent_stalls_ongoing` counts it by reason.
    public func stallOngoing(target: String, key: String, reason: StallReason) {
        lock.withLock {
            ongoing[target, default: [:]][key] = reason
            publishOngoing(target)
        }
    }

    public func stallFinished(target: String, key: String) {
        lock.withLock {
            ongoing[target]?[key] = nil
            publishOngoing(target)
        }
    }

    private func publishOngoing(_ target: String) {
        let now = ongoing[target] ?? [:]
        for reason in StallReason.allKnown where reason != .snapshot && reason != .died {
            registry.makeGauge(
                descriptor: AgentMetrics.descriptor(
                    "stalls_ongoing", "", "Stalls going on now (past the threshold, not ended), by target and reason."),
                labels: [("target", target), ("reason", reason.name)]
            ).set(to: Double(now.values.filter { $0 == reason }.count))
        }
    }

    /// Loop health: turns of the target's event loop since the last call (a monitor's running
    /// total; replaced monitors start over, like `update`), and the lengths of busy turns.
    public func updateLoop(target: String, monitorKey: String, turns: UInt64, evidence: LoopTurnEvidence, turnLengths: [Double]) {
        lock.withLock {
            let key = target + "\u{0}" + monitorKey
            let before = loopTotals[key] ?? 0
            if turns > before { health[target, default: LoopHealthWindow()].addTurns(turns - before) }
            health[target, default: LoopHealthWindow()].addTurnLengths(turnLengths, at: Date().timeIntervalSince1970)
            if turns > before {
                registry.makeCounter(
                    descriptor: AgentMetrics.descriptor(
                        "loop_turns", "total",
                        "Turns of the target's event loop (exact with the kernel counter or loop probe, a lower bound with the stack rule)."),
                    labels: [("target", target), ("evidence", evidence.rawValue.replacingOccurrences(of: " ", with: "_"))]
                ).increment(by: Int64(turns - before))
            }
            loopTotals[key] = turns
            guard !turnLengths.isEmpty else { return }
            let histogram = registry.makeValueHistogram(
                descriptor: AgentMetrics.descriptor(
                    "loop_busy_turn", "seconds",
                    "Length of busy loop turns seen by the probe (from leaving the wait to the next turn); turns shorter than a probe interval only count in loop_turns_total."
                ), labels: [("target", target)],
                buckets: TurnLengthHistogram.bounds)
            for length in turnLengths { histogram.record(length) }
        }
    }

    /// Whether the target currently has a process being watched.
    public func setTargetUp(_ target: String, _ up: Bool) {
        lock.withLock {
            registry.makeGauge(
                descriptor: AgentMetrics.descriptor("target", "up", "1 while the target's process is being watched, 0 while the agent waits for it."),
                labels: [("target", target)]
            ).set(to: up ? 1 : 0)
        }
    }

    public func recordAttach(target: String) {
        lock.withLock {
            registry.makeCounter(
                descriptor: AgentMetrics.descriptor(
                    "target_attaches", "total", "Times the agent started watching a process of this target (restarts add one)."), labels: [("target", target)]
            ).increment()
        }
    }

    /// Adds what a monitor observed since the last call: seconds per main-thread state and
    /// capture pauses. Takes cumulative values and adds the difference, so monitors replaced
    /// on restart keep counters monotonic.
    public func update(
        target: String, monitorKey: String, stateSeconds: [ThreadActivity: Double], pauseSeconds: Double,
        capturesWithStop: Int, capturesWithoutStop: Int
    ) {
        lock.withLock {
            let key = target + "\u{0}" + monitorKey
            let previous = stateTotals[key] ?? [:]
            for (activity, seconds) in stateSeconds where activity != .gone {
                let delta = seconds - (previous[activity] ?? 0)
                guard delta > 0 else { continue }
                health[target, default: LoopHealthWindow()].addStateSeconds(delta, busy: activity.isBusy)
                registry.makeCounter(
                    descriptor: AgentMetrics.descriptor(
                        "main_thread_state", "seconds_total", "Seconds the target's main thread spent in each state, as probed from /proc."),
                    labels: [("target", target), ("state", AgentMetrics.stateName(activity))]
                ).increment(by: delta)
            }
            stateTotals[key] = stateSeconds
            let before = pauseTotals[key] ?? (0, 0, 0)
            if pauseSeconds > before.seconds {
                registry.makeCounter(
                    descriptor: AgentMetrics.descriptor(
                        "capture_pause", "seconds_total", "Total time the target's thread was stopped by the agent's captures."), labels: [("target", target)]
                ).increment(by: pauseSeconds - before.seconds)
            }
            for (method, now, then) in [
                ("ptrace_stop", capturesWithStop, before.stops),
                ("no_stop", capturesWithoutStop, before.nonStop),
            ] where now > then {
                registry.makeCounter(
                    descriptor: AgentMetrics.descriptor("captures", "total", "Stack captures, by whether the thread had to be stopped."),
                    labels: [("target", target), ("method", method)]
                ).increment(by: Int64(now - then))
            }
            pauseTotals[key] = (pauseSeconds, capturesWithStop, capturesWithoutStop)
        }
    }

    /// Forgets a finished monitor's running totals (its counts stay in the counters).
    public func forget(target: String, monitorKey: String) {
        lock.withLock {
            stateTotals[target + "\u{0}" + monitorKey] = nil
            pauseTotals[target + "\u{0}" + monitorKey] = nil
            loopTotals[target + "\u{0}" + monitorKey] = nil
            // A process gone mid-stall without an end event leaves no stall counted as going on.
            if let stalls = ongoing[target], stalls.keys.contains(where: { $0.hasPrefix(monitorKey + ":") }) {
                ongoing[target] = stalls.filter { !$0.key.hasPrefix(monitorKey + ":") }
                publishOngoing(target)
            }
        }
    }

    /// Refreshes the agent's own CPU, memory and the timestamp.
    public func touch() {
        let cpu = AgentResourceUsage.cpuAndPeak().cpuSeconds
        lock.withLock {
            if cpu > lastCPUSeconds { agentCPU.increment(by: cpu - lastCPUSeconds) }
            lastCPUSeconds = cpu
            agentResident.set(to: Double(AgentResourceUsage.residentBytes()))
            let now = Date().timeIntervalSince1970
            lastUpdate.set(to: now)
            publishHealth(at: now)
        }
    }

    /// The loop-health gauges, over the last minute: what an operator's dashboard shows as a
    /// server's pulse, and what the "loop unhealthy" alert reads.
    private func publishHealth(at now: Double) {
        for (target, _) in health {
            let summary = health[target]!.close(at: now)
            let labels = [("target", target)]
            registry.makeGauge(
                descriptor: AgentMetrics.descriptor("loop_turns_per_second", "", "Event-loop turns per second over the last minute."),
                labels: labels
            ).set(to: summary.turnsPerSecond)
            registry.makeGauge(
                descriptor: AgentMetrics.descriptor(
                    "loop_busy", "ratio", "Share of the last minute the target's main threads spent away from their loop's wait (0-1)."),
                labels: labels
            ).set(to: summary.busyRatio)
            registry.makeGauge(
                descriptor: AgentMetrics.descriptor("loop_longest_turn", "seconds", "The longest busy loop turn that ended in the last minute."),
                labels: labels
            ).set(to: summary.longestTurn)
        }
    }

    public func render() -> String {
        // The exposition format wants every line, the last included, to end in a newline.
        let text = lock.withLock { registry.emitToString() }
        return text.isEmpty || text.hasSuffix("\n") ? text : text + "\n"
    }

    static func descriptor(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "stallagent", metricName: metric, unitName: unit, helpText: help)
    }

    static func stateName(_ activity: ThreadActivity) -> String {
        switch activity {
        case .idle: return "idle"
        case .running: return "running"
        case .lockWait: return "lock_wait"
        case .ioWait: return "io_wait"
        case .blockedCall: return "blocked"
        case .stopped: return "stopped"
        case .gone: return "gone"
        }
    }
}
