import CPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Keeps each tracepoint the agent counts on registered for as long as the agent runs, so
/// that closing a watched process's counters is instant. The kernel unregisters a tracepoint
/// from perf when its last event closes and then waits for an RCU grace period: ~40 ms per
/// tracepoint here, ~0.35 s for one process's loop counters and waker, during which the
/// agent's loop (every other watched process's probes) stood still. With one disabled event
/// per tracepoint held on the agent's own thread, no close is the last.
///
/// At exit the last close cannot be avoided, and the kernel would make the agent's exit (the
/// wrapped command's end, a unit's stop) wait for it: a child inherits the descriptors and
/// releases them after the agent is gone (`sa_perf_release_in_background`).
enum TracepointAnchors {
    private static let anchored = Mutex<[UInt64: Int32]>([:])

    /// Anchors `ids` not anchored yet. Best effort: without an anchor a close is only slower.
    static func hold(_ ids: [UInt64]) {
        anchored.withLock { anchored in
            if anchored.isEmpty { atexit { sa_perf_release_in_background() } }
            for id in ids where anchored[id] == nil {
                let fd = sa_perf_tracepoint_anchor(id)
                if fd >= 0 { anchored[id] = fd }
            }
        }
    }
}
