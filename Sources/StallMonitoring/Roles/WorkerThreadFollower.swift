import StallProc

/// The one thread a batch process's main thread waits for. Rust's libtest runs every test in
/// a thread of its own, named after the test, while its main thread waits on a channel: the
/// main thread's stack showed the runner's wait through every test, and two slow tests in a
/// row were one stall of both their lengths in `Thread::park` (`cargo test`, issue 25). While
/// the main thread of a batch process waits in a futex and exactly one other thread lives, that
/// thread's state and stack stand for the process's (docs/architecture.md, "A thread the main
/// thread waits for"). With several other threads there is no telling which one it waits for,
/// and the main thread is watched as before.
final class WorkerThreadFollower {
    /// What the follower reads of the target: the live threads besides the main one, and one
    /// thread's probe files. `ProcessInspector` and `ThreadProbeFiles`, or a fake in tests.
    protocol Target {
        func otherThreads() -> [Int32]
        func probe(tid: Int32) -> Probe?
    }

    protocol Probe: AnyObject {
        var tid: Int32 { get }
        func stat() -> ProcThreadStat?
        func syscall() -> ProcSyscallInfo?
        func schedstat() -> ProcSchedstat?
    }

    /// How often the threads are listed again while one is followed: a second thread appearing
    /// (parallel tests) ends the following within this, a test thread's exit at the next probe.
    static let relistInterval = 0.1

    private let target: Target
    private var followed: Probe?
    private var nextList = -Double.infinity
    /// The last CPU and run-queue counts seen per followed thread: the detector is given one
    /// count that only grows, summed over the threads followed, however they come and go.
    private var lastCounts: (tid: Int32, cpu: UInt64, queue: UInt64)?
    private(set) var cpuNanos: UInt64 = 0
    private(set) var runQueueNanos: UInt64 = 0

    init(target: Target) {
        self.target = target
    }

    /// The thread to watch instead of the main thread now, with what it is doing; nil when
    /// there is not exactly one other live thread.
    func look(at now: Double) -> (probe: Probe, stat: ProcThreadStat, syscall: ProcSyscallInfo?)? {
        if let probe = followed, now < nextList, let seen = read(probe) { return seen }
        nextList = now + Self.relistInterval
        let others = target.otherThreads()
        guard others.count == 1, let tid = others.first else {
            followed = nil
            return nil
        }
        if followed?.tid != tid { followed = target.probe(tid: tid) }
        guard let probe = followed, let seen = read(probe) else {
            followed = nil
            return nil
        }
        return seen
    }

    /// Stops following (the main thread left its wait, or the process exec'd).
    func forget() {
        followed = nil
        nextList = -Double.infinity
    }

    private func read(_ probe: Probe) -> (probe: Probe, stat: ProcThreadStat, syscall: ProcSyscallInfo?)? {
        guard let stat = probe.stat(), stat.state != "Z", stat.state != "X" else { return nil }
        let syscall = probe.syscall()
        if let counts = probe.schedstat() {
            if let last = lastCounts, last.tid == probe.tid {
                cpuNanos &+= counts.cpuNanos &- min(counts.cpuNanos, last.cpu)
                runQueueNanos &+= counts.runQueueNanos &- min(counts.runQueueNanos, last.queue)
            }
            lastCounts = (probe.tid, counts.cpuNanos, counts.runQueueNanos)
        }
        return (probe, stat, syscall)
    }
}

extension ThreadProbeFiles: WorkerThreadFollower.Probe {}

extension ProcessInspector: WorkerThreadFollower.Target {
    func otherThreads() -> [Int32] { Self.liveThreads(of: pid) }

    func probe(tid: Int32) -> WorkerThreadFollower.Probe? { try? ThreadProbeFiles(pid: pid, tid: tid) }
}
