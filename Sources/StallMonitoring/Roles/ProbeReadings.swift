import StallProc

/// What the latest probe read of the main thread that later steps go on: its CPU and run-queue
/// time, the system call it was in, and whether that call was a wait nested inside work.
struct ProbeReadings {
    /// The main thread's own CPU and run-queue time at the last probe that could read its
    /// schedstat: counts that only grow, whatever a probe fails to read.
    private(set) var cpuNanos: UInt64 = 0
    private(set) var runQueueNanos: UInt64 = 0
    /// The latest probe read the schedstat (the counts above are its own, not an older probe's).
    private(set) var schedstatRead = false
    /// The system call the latest probe found the thread in.
    var syscallNumber: Int?
    /// True while the latest probe found the thread in a wait nested inside work.
    var inNestedWait = false

    /// A probe's schedstat, nil when it could not be read.
    mutating func took(_ schedstat: ProcSchedstat?) {
        schedstatRead = schedstat != nil
        cpuNanos = schedstat?.cpuNanos ?? cpuNanos
        runQueueNanos = schedstat?.runQueueNanos ?? runQueueNanos
    }

    /// The thread ran since the last schedstat taken (unknown without one: no).
    func ran(_ schedstat: ProcSchedstat?) -> Bool {
        schedstat.map { $0.cpuNanos > cpuNanos } ?? false
    }
}
