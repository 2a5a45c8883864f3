/// A source of monotonic time in seconds. Detection never reads a clock itself — every call
/// takes the time — but the agent's loop does, and its tests swap in `FakeClock`.
///
/// The real implementation belongs outside Detection, on the same clock the probes and captures
/// are timed with (CLOCK_MONOTONIC via `MonotonicTime` in Capture/), so that observation, sample
/// and capture times can be compared directly.
public protocol MonotonicClock: Sendable {
    func now() -> Double
}
