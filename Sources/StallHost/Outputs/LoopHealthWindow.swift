/// A target's loop health over the last minute, from the running totals the metrics receive
/// every second: turns per second, the share of time its main threads were away from their
/// loop's wait, and the longest busy turn. A minute, because an operator's dashboard and the
/// "loop unhealthy" alert ask how the server is now, not since the agent started.
struct LoopHealthWindow {
    struct Summary: Equatable {
        var turnsPerSecond: Double
        var busyRatio: Double
        var longestTurn: Double
    }

    static let span = 60.0

    private var turns: UInt64 = 0
    private var busySeconds = 0.0
    private var allSeconds = 0.0
    /// Running totals when each window point was closed, oldest first.
    private var points: [(time: Double, turns: UInt64, busy: Double, all: Double)] = []
    /// Busy turns that ended, with when they were reported.
    private var lengths: [(time: Double, seconds: Double)] = []

    mutating func addTurns(_ count: UInt64) { turns &+= count }

    mutating func addStateSeconds(_ seconds: Double, busy: Bool) {
        allSeconds += seconds
        if busy { busySeconds += seconds }
    }

    mutating func addTurnLengths(_ seconds: [Double], at time: Double) {
        for length in seconds { lengths.append((time, length)) }
    }

    /// Closes a point at `now` and summarises the last minute (or the time since the first
    /// point, when the target is younger than that).
    mutating func close(at now: Double) -> Summary {
        points.append((now, turns, busySeconds, allSeconds))
        while let first = points.first, now - first.time > Self.span, points.count > 1 { points.removeFirst() }
        lengths.removeAll { now - $0.time > Self.span }
        // The first point: everything so far (turns per second needs a second point).
        let oldest = points.count == 1 ? (time: now, turns: UInt64(0), busy: 0.0, all: 0.0) : points.first!
        let elapsed = now - oldest.time
        let all = allSeconds - oldest.all
        return Summary(
            turnsPerSecond: elapsed > 0 ? Double(turns &- oldest.turns) / elapsed : 0,
            busyRatio: all > 0 ? min(1, max(0, (busySeconds - oldest.busy) / all)) : 0,
            longestTurn: lengths.map(\.seconds).max() ?? 0)
    }
}
