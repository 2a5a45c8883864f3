import CPosix
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Keeps each tracepoint the loop-turn counters use registered while any counter is open, so
/// that closing one watched thread's counters is instant, and lets the tracepoints go once no
/// counter has been open for `releaseAfter`.
///
/// The kernel unregisters a tracepoint from perf when its last event closes and then waits for
/// an RCU grace period: ~40 ms per tracepoint here, during which the closing thread stands
/// still. With one disabled event per tracepoint held by the agent, no counter's close is the
/// last. But while any system-call tracepoint event exists, every system call of every thread
/// on the host takes the kernel's slow path (docs/architecture.md, "What the tracepoints cost
/// the host"), so the anchors are closed, on a thread of their own, once every watched loop has
/// rested its counters. A counter opened during that close waits for it (the kernel's
/// `event_mutex`), once per quiet-to-busy change of the whole host.
///
/// At exit the last close cannot be avoided, and the kernel would make the agent's exit (the
/// wrapped command's end, a unit's stop) wait for it: a child inherits the descriptors and
/// releases them after the agent is gone (`sa_perf_release_in_background`).
public enum TracepointAnchors {
    private struct State {
        var anchored: [UInt64: Int32] = [:]
        /// Counters open now.
        var users = 0
        /// Changes with every counter opened: a release scheduled before it is stale.
        var generation = 0
        var exitHookInstalled = false
    }

    private static let state = Mutex(State())

    /// How long the host must have had no counter open before the anchors go.
    public static let releaseAfter = 2.0

    /// A counter opens: anchors `ids` not anchored yet. Best effort: without an anchor a close
    /// is only slower.
    static func retain(_ ids: [UInt64]) {
        state.withLock { state in
            state.users += 1
            state.generation &+= 1
            anchor(ids, in: &state)
        }
    }

    /// An open counter counts one more tracepoint.
    static func add(_ ids: [UInt64]) {
        state.withLock { anchor(ids, in: &$0) }
    }

    /// A counter closed; the last one schedules the anchors' release.
    static func release() {
        let generation: Int? = state.withLock { state in
            state.users -= 1
            return state.users == 0 ? state.generation : nil
        }
        guard let generation else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + releaseAfter) {
            let fds: [Int32] = state.withLock { state in
                guard state.users == 0, state.generation == generation else { return [] }
                defer { state.anchored = [:] }
                return Array(state.anchored.values)
            }
            fds.forEach { close($0) }
        }
    }

    private static func anchor(_ ids: [UInt64], in state: inout State) {
        if !state.exitHookInstalled {
            state.exitHookInstalled = true
            atexit { sa_perf_release_in_background() }
        }
        for id in ids where state.anchored[id] == nil {
            let fd = sa_perf_tracepoint_anchor(id)
            if fd >= 0 { state.anchored[id] = fd }
        }
    }
}
