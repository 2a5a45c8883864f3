/// One stack sample of the main thread, taken while it was busy.
public struct StackSample: Sendable {
    /// Monotonic seconds, on the same clock as `ThreadObservation.time`.
    public var time: Double
    /// The activity the agent saw when it took the sample.
    public var activity: ThreadActivity
    /// Innermost first.
    public var frames: [SampledFrame]

    public init(time: Double, activity: ThreadActivity, frames: [SampledFrame]) {
        self.time = time
        self.activity = activity
        self.frames = frames
    }
}
