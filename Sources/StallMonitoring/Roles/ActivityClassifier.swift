import StallDetection
import StallProc

/// The thread's activity from its /proc state and system call. A thread still in the very same
/// call (identical /proc syscall line and state) is not classified again: that would re-read its
/// fd link and, with --idle-frame, its stack on every probe while it waits.
final class ActivityClassifier {
    let classifier: ThreadStateClassifier
    /// `--idle-frame` patterns were given (see `WaitSiteClassifier.isIdleByFrame`).
    private let hasIdleFrames: Bool
    private let clock: () -> Double
    private let readFrozen: () -> Bool
    // The last classification and the /proc state it was made for.
    private var lastClassification: (state: Character, syscall: ProcSyscallInfo?, activity: ThreadActivity)?
    private var lastFrozenCheck: (time: Double, frozen: Bool)?

    /// `readFrozen` says whether the target's cgroup is frozen now (`CgroupFreezer`).
    init(classifier: ThreadStateClassifier, hasIdleFrames: Bool, clock: @escaping () -> Double, readFrozen: @escaping () -> Bool) {
        self.classifier = classifier
        self.hasIdleFrames = hasIdleFrames
        self.clock = clock
        self.readFrozen = readFrozen
    }

    /// The activity for `state` in `syscall`; `fileKind` names the target's descriptors, and
    /// `idleByFrame` says whether a busy wait's stack is one of `--idle-frame`'s.
    func classify(
        state: Character, syscall: ProcSyscallInfo?, fileKind: (Int) -> String?, idleByFrame: (ProcSyscallInfo) -> Bool
    ) -> ThreadActivity {
        if let last = lastClassification, last.state == state, last.syscall == syscall, syscall != .running {
            return last.activity
        }
        var activity = classifier.classify(state: state, syscall: syscall, fileKind: fileKind).activity
        if hasIdleFrames, activity.isBusy, activity != .running, let syscall, idleByFrame(syscall) {
            activity = .idle
        }
        if state == "D", activity.isBusy, isFrozen() { activity = .stopped }
        lastClassification = (state, syscall, activity)
        return activity
    }

    /// The process exec'd: the old program's call is classified afresh.
    func forget() {
        lastClassification = nil
    }

    /// A frozen cgroup's threads wait in `D`: stopped, not in I/O (`CgroupFreezer`). Read at
    /// most every quarter second: a thread in `D` outside a system call is classified at
    /// every probe.
    private func isFrozen() -> Bool {
        let now = clock()
        if let last = lastFrozenCheck, now - last.time < 0.25 { return last.frozen }
        let frozen = readFrozen()
        lastFrozenCheck = (now, frozen)
        return frozen
    }
}
