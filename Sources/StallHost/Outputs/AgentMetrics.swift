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
    private let lock = NSLock()

    public init() {
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

    /// Counts a finished stall.
    public func recordStall(target: String, reason: StallReason, duration: Double) {
        lock.withLock {
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

    /// Loop health: turns of the target's event loop since the last call (a monitor's running
    /// total; replaced monitors start over, like `update`), and the lengths of busy turns.
    public func updateLoop(target: String, monitorKey: String, turns: UInt64, evidence: LoopTurnEvidence, turnLengths: [Double]) {
        lock.withLock {
            let key = target + "\u{0}" + monitorKey
            let before = loopTotals[key] ?? 0
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
        }
    }

    /// Refreshes the agent's own CPU, memory and the timestamp.
    public func touch() {
        let cpu = AgentResourceUsage.cpuAndPeak().cpuSeconds
        lock.withLock {
            if cpu > lastCPUSeconds { agentCPU.increment(by: cpu - lastCPUSeconds) }
            lastCPUSeconds = cpu
            agentResident.set(to: Double(AgentResourceUsage.residentBytes()))
            lastUpdate.set(to: Date().timeIntervalSince1970)
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
