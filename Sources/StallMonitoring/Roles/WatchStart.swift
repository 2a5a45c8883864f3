import StallReports

/// When the watch began, and when a compiled descendant found after its start was born: its
/// first busy stretch is dated from its birth, not from the first probe.
struct WatchStart {
    /// When the watch began (0 until `begin`).
    private(set) var time = 0.0
    /// How long before the attach a compiled descendant found late started, then when (see
    /// init): its first busy stretch is dated from there.
    private var bornAgo: Double?
    private var bornAt: Double?

    /// `age`: the process's age when the attach began; `joinedAfterStart`: a wrapped command's
    /// descendant found after its start-up, in a batch watch (`batch`); `mainModule` names the
    /// program's main module.
    init(age: Double?, joinedAfterStart: Bool, batch: Bool, mainModule: () -> String?) {
        // A compiled program found after its start (a ctest test binary, a Rust test binary under
        // cargo: found half a threshold late) has been at its work since it started: its start-up
        // takes milliseconds. An interpreter's takes a good part of a second (imports, pytest's
        // collection) and is not its first test's.
        if joinedAfterStart, batch, let module = mainModule(), !AppFrameRule.isRuntimeModule(module) {
            bornAgo = age
        }
    }

    /// The watch begins at `now`.
    mutating func begin(at now: Double) {
        time = now
        if let age = bornAgo.take() { bornAt = now - age }
    }

    /// When the process was born, if it is to be dated so: given once, to the first step,
    /// whatever that step makes of it.
    mutating func takeBirth() -> Double? {
        bornAt.take()
    }
}
