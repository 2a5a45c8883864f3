import StallDetection

/// With the loop probe (libstallprobe.so, read by `LoopProbeReader`), episode edges are the
/// loop's own: a busy episode ends at the first idle wait since the last probe and the next
/// begins when the last wait returned — exact times, and loop turns shorter than the probe
/// interval are not missed.
final class LoopProbeInterpreter {
    /// libstallprobe.so in the target, when it was started with it preloaded (nil: none, or
    /// `--loop-turns stack-rule`).
    let reader: LoopProbeReader?
    /// The loop's iteration count at the last read.
    private(set) var lastIterations: UInt64?
    /// The latest time the detector was fed, by a probe or by an edge: an edge is fed only
    /// between it and the probe's time, so the detector's clock never goes back.
    private(set) var lastFedTime = -Double.infinity

    init(reader: LoopProbeReader?) {
        self.reader = reader
    }

    /// What the probe publishes now; nil without a probe or when it cannot be read.
    func read() -> LoopProbeReader.State? {
        reader?.read()
    }

    /// A probe's observation was fed to the detector at `time`.
    func fed(at time: Double) {
        lastFedTime = time
    }

    /// `observation`, corrected by what the loop probe's `state` says the thread is doing.
    /// `addTurns` counts the iterations since the last read; `feed` gives the detector an edge
    /// found between the last fed time and the probe's (the end of the episode at a wait, then
    /// the start of the next when the last wait returned), which may end or begin an episode:
    /// `isInEpisode` is asked again after it.
    func apply(
        _ state: LoopProbeReader.State, to observation: ThreadObservation, isInEpisode: () -> Bool,
        addTurns: (UInt64) -> Void, feed: (ThreadObservation) -> Void
    ) -> ThreadObservation {
        defer { lastIterations = state.iterations }
        if let last = lastIterations, state.iterations > last { addTurns(state.iterations - last) }
        var result = observation
        guard observation.activity != .gone, observation.activity != .stopped else { return result }
        let previous = lastIterations ?? state.iterations
        func feedEdge(_ nanos: UInt64, _ activity: ThreadActivity) {
            let time = Double(nanos) / 1e9
            guard nanos > 0, time > lastFedTime, time < observation.time else { return }
            feed(ThreadObservation(time: time, activity: activity, cpuNanos: observation.cpuNanos, runQueueNanos: observation.runQueueNanos))
            lastFedTime = time
        }
        if state.iterations > previous, isInEpisode(),
            state.iterations - previous <= UInt64(LoopProbeReader.ringSize)
        {
            feedEdge(state.wait(number: previous + 1).waitNanos, .idle)
        }
        if state.inWait {
            result.activity = .idle
        } else {
            if !isInEpisode(), state.iterations > 0 {
                feedEdge(state.wait(number: state.iterations).wokeNanos, result.activity.isBusy ? result.activity : .running)
            }
            // Just out of the wait, /proc can still show the idle call for an instant.
            if result.activity == .idle { result.activity = .running }
        }
        return result
    }
}
