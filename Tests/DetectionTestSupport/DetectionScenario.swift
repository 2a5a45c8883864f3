import StallDetection

/// Test support (shared by the detection, report and integration tests): drives a `StallDetector` with a synthetic probe stream on an exact grid
/// (time = tick × probeInterval, so no drift from summing), sampling the way the agent will:
/// observe, then record a sample whenever the detector wants one. `running` advances the
/// schedstat counters by the given on-CPU / run-queue shares of each interval.
public struct DetectionScenario {
    public struct TimedEvent {
        public var time: Double
        public var event: DetectorEvent
    }

    public var detector: StallDetector
    public let probeInterval: Double
    public private(set) var tick = 0
    public private(set) var cpuNanos: UInt64 = 0
    public private(set) var runQueueNanos: UInt64 = 0
    /// The stack recorded for every sample until changed.
    public var stack: [SampledFrame] = DetectionScenario.stack("work", "main")
    public private(set) var events: [TimedEvent] = []
    public private(set) var sampleTimes: [Double] = []

    public init(configuration: DetectorConfiguration = DetectorConfiguration(), probeInterval: Double = 0.01) {
        detector = StallDetector(configuration: configuration)
        self.probeInterval = probeInterval
    }

    /// A scenario already past start-up (first probe idle) so the loop threshold applies.
    public static func inLoop(configuration: DetectorConfiguration = DetectorConfiguration(), idleFor seconds: Double = 0.5)
        -> DetectionScenario
    {
        var scenario = DetectionScenario(configuration: configuration)
        scenario.run(.idle, for: seconds)
        return scenario
    }

    public var time: Double { Double(tick) * probeInterval }

    public mutating func run(_ activity: ThreadActivity, for seconds: Double, onCPU: Double = 1, runQueue: Double = 0) {
        let steps = Int((seconds / probeInterval).rounded())
        for _ in 0..<steps {
            let now = time
            let observation = ThreadObservation(
                time: now, activity: activity, cpuNanos: cpuNanos, runQueueNanos: runQueueNanos)
            append(detector.observe(observation), at: now)
            if detector.wantsSample(at: now) {
                sampleTimes.append(now)
                append(detector.record(StackSample(time: now, activity: activity, frames: stack)), at: now)
            }
            if activity == .running {
                cpuNanos += UInt64((probeInterval * onCPU * 1e9).rounded())
                runQueueNanos += UInt64((probeInterval * runQueue * 1e9).rounded())
            }
            tick += 1
        }
    }

    public mutating func finish(targetGone: Bool) {
        let now = time
        append(detector.finish(at: now, targetGone: targetGone), at: now)
    }

    public mutating func append(_ new: [DetectorEvent], at time: Double) {
        events += new.map { TimedEvent(time: time, event: $0) }
    }

    // MARK: - Event views

    public var started: [StallSnapshot] { events.compactMap { if case .stallStarted(let s) = $0.event { s } else { nil } } }
    public var updated: [StallSnapshot] { events.compactMap { if case .stallUpdated(let s) = $0.event { s } else { nil } } }
    public var ended: [StallSnapshot] { events.compactMap { if case .stallEnded(let s) = $0.event { s } else { nil } } }
    public var episodes: [BusyEpisodeSummary] {
        events.compactMap { if case .episodeEnded(let e) = $0.event { e } else { nil } }
    }
    public var stallEvents: [TimedEvent] { events.filter { $0.event.snapshot != nil } }
    public var kinds: [String] { events.map(\.event.kind) }

    // MARK: - Frames

    public static func frame(_ function: String, cfa: UInt64 = 0, module: String = "app", address: UInt64 = 0) -> SampledFrame {
        SampledFrame(function: function, module: module, address: address, cfa: cfa)
    }

    /// Innermost first; CFAs grow outward from 0x7000 like a real downward-growing stack, so one
    /// name list always yields the same activations.
    public static func stack(_ functions: String...) -> [SampledFrame] {
        stack(functions)
    }

    public static func stack(_ functions: [String]) -> [SampledFrame] {
        functions.enumerated().map { index, name in
            frame(name, cfa: 0x7000 + UInt64(index) * 0x100, address: 0x40_0000 + UInt64(index) * 0x10)
        }
    }
}
