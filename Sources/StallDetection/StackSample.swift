/// One stack sample of the main thread, taken while it was busy.
public struct StackSample: Sendable {
    /// Monotonic seconds, on the same clock as `ThreadObservation.time`.
    public var time: Double
    /// The activity the agent saw when it took the sample.
    public var activity: ThreadActivity
    /// Innermost first.
    public var frames: [SampledFrame]
    /// The unwind reached the outermost frame (or the frame limit): false for a stack cut short
    /// where unwind information ran out (a V8 stub) or the stack copy ended.
    public var isWhole: Bool

    public init(time: Double, activity: ThreadActivity, frames: [SampledFrame], isWhole: Bool = true) {
        self.time = time
        self.activity = activity
        self.frames = frames
        self.isWhole = isWhole
    }
}
