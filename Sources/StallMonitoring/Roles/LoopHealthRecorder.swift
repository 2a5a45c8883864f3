import StallDetection

/// Where the main thread's time went, from the probes (the summary's and metrics' idle and
/// busy seconds), the busy turns' lengths, and the loop health lines `stallagent view` reads:
/// every few seconds of watching, the turns, busy time and longest turn since the last line.
/// A healthy loop never stalls, so these are the only evidence of how close it came; apart
/// from the monitor, what a line says is tested without a process or a clock.
struct LoopHealthRecorder {
    /// Seconds between two loop health lines.
    static let interval = 5.0

    /// One loop health line's figures (since the line before).
    struct Line: Equatable {
        var seconds: Double
        var turns: UInt64
        var busySeconds: Double
        var longestTurnSeconds: Double
    }

    /// Seconds the main thread spent in each state, from the probes.
    private(set) var stateSeconds: [ThreadActivity: Double] = [:]
    /// The latest probe's time and activity (or the moment the thread left its wait).
    private(set) var lastObservation: (time: Double, activity: ThreadActivity)?
    /// Busy turns' lengths (each busy episode ends with a turn or idle).
    private(set) var turnLengths = TurnLengthHistogram()
    /// Turn lengths not yet taken by the metrics (bounded between two metrics updates).
    private var pendingTurnLengths: [Double] = []
    /// The last line's time (written or not), turn count and busy seconds.
    private var health: (time: Double, turns: UInt64, busy: Double)?
    private var longestTurn = 0.0

    /// Seconds spent busy (running, blocked, in I/O, waiting on a lock...).
    var busySeconds: Double { stateSeconds.filter { $0.key.isBusy }.values.reduce(0, +) }

    /// When the last line was due (nil before the first).
    var lastLineTime: Double? { health?.time }

    /// True when a line is due at `now`.
    func isDue(at now: Double) -> Bool {
        health == nil || now - health!.time >= Self.interval
    }

    /// The thread was seen `activity` at `time`: the time since the last observation counts
    /// as what it was then.
    mutating func observe(at time: Double, _ activity: ThreadActivity) {
        if let last = lastObservation, time > last.time {
            stateSeconds[last.activity, default: 0] += time - last.time
        }
        lastObservation = (time, activity)
    }

    /// Time asleep in the wait counts as idle up to `now`, with no probe.
    mutating func accountIdleTime(until now: Double) {
        guard let last = lastObservation, last.activity == .idle, now > last.time else { return }
        stateSeconds[.idle, default: 0] += now - last.time
        lastObservation = (now, .idle)
    }

    /// A busy turn ended after `duration` seconds.
    mutating func noteTurn(_ duration: Double) {
        turnLengths.add(duration)
        if pendingTurnLengths.count < 4096 { pendingTurnLengths.append(duration) }
        longestTurn = max(longestTurn, duration)
    }

    /// The busy turns that ended since the last call, for a metrics histogram.
    mutating func drainTurnLengths() -> [Double] {
        defer { pendingTurnLengths.removeAll(keepingCapacity: true) }
        return pendingTurnLengths
    }

    /// Ends the stretch since the last line at `now`, with `turns` loop turns seen so far: its
    /// line, or nil. The first point only starts the count; a process watched under a second
    /// says nothing, and one with no loop (`isLoop` false: a test runner, a shell waiting for
    /// its child) has no turns.
    mutating func close(at now: Double, turns: UInt64, isLoop: () -> Bool) -> Line? {
        let busy = busySeconds
        defer {
            health = (now, turns, busy)
            longestTurn = 0
        }
        guard let last = health, now > last.time, isLoop() else { return nil }
        return Line(
            seconds: now - last.time, turns: turns &- last.turns, busySeconds: max(0, busy - last.busy),
            longestTurnSeconds: longestTurn)
    }
}
