import StallDetection
import Synchronization

/// Test support (shared): a `MonotonicClock` that moves only when told to. The detection and the
/// monitor-loop tests both drive their code with it. A class so that the code under test and the
/// test share one clock; thread-safe so it can be shared with tasks.
public final class FakeClock: MonotonicClock, Sendable {
    private let current: Mutex<Double>

    public init(start: Double = 0) {
        current = Mutex(start)
    }

    public func now() -> Double {
        current.withLock { $0 }
    }

    /// Moves the clock forward; negative steps are ignored, since a monotonic clock never goes back.
    public func advance(by seconds: Double) {
        current.withLock { $0 += max(0, seconds) }
    }

    /// Sets the time, but never backwards.
    public func set(to time: Double) {
        current.withLock { $0 = max($0, time) }
    }
}
