/// What decides that the event loop turned, which ends a busy episode even when the probe never
/// saw the thread asleep (docs/architecture.md, "Detection model"). Best first; every report names it.
public enum LoopTurnEvidence: String, Codable, Sendable, CaseIterable {
    /// libstallprobe.so in the target publishes every wait: exact.
    case loopProbe = "loop probe"
    /// Per-thread perf_event counters on the idle-wait syscall tracepoints: exact, at probe
    /// resolution, no code in the target.
    case kernelCounter = "kernel counter"
    /// No exact evidence: a stall needs a frame outside the loop's own frames held in every
    /// sample for the threshold. Cannot tell apart two requests served back to back through
    /// the same frame, nor work done entirely inside a loop frame (an interpreter's eval loop).
    case stackRule = "stack rule"
    /// A batch process (never idle, no loop): its work ends when no frame held since the
    /// episode began is left, the runner's own frames excepted (`StallDetector`, phase batch).
    case batchRule = "batch rule"
}
