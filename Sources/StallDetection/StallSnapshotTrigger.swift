/// Why a `StallSnapshot` was produced; lets the agent log "stack changed" vs a routine re-capture.
public enum StallSnapshotTrigger: String, Codable, CaseIterable, Sendable {
    /// The episode's age just crossed the threshold (`DetectorEvent.stallStarted`).
    case detected
    /// A scheduled re-capture (threshold × 1, 1, 2, 3, 5, 8 … while the stack is unchanged).
    case annealing
    /// The heaviest stack changed; the annealing sequence restarts.
    case stackChanged
    /// The agent set or cleared the deadlock flag (`StallDetector.setDeadlock(_:)`).
    case deadlockChanged
    /// The final snapshot (`DetectorEvent.stallEnded`).
    case ended
    /// An on-demand capture (`StallDetector.captureSnapshot(at:)`, reason `snapshot`).
    case requested
}
