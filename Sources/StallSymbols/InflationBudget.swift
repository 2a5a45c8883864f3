import Synchronization

/// One memory budget for everything the agent inflates on a target's behalf — compressed
/// DWARF (`DwarfSubset`) and MiniDebugInfo (`MiniDebugInfo`) — per agent, not per section or
/// module. A file the target's owner controls can claim any inflated size: with a limit per
/// section and per module only, a 0.9 MB compressed `.debug_info` took the root agent to
/// 928 MB and four such libraries on one stalled stack to 1,269 MB (issue 27). What is
/// inflated is held while its module is cached; a file that would take more than what is
/// left is read without it (no source lines, or only `.dynsym` names), and that is said once
/// per file (`drainRefusals`). docs/security.md, "Memory".
public final class InflationBudget: Sendable {
    /// The agent's budget: 64 MB. Debian's libpython3.11 debug file, the largest a stack of
    /// ours meets, inflates to ~10 MB of what source lines need.
    public static let shared = InflationBudget(limit: 64 << 20)

    public let limit: Int
    private struct State {
        var used = 0
        var refused: [String] = []
        var said: Set<String> = []
    }
    private let state = Mutex(State())

    public init(limit: Int) { self.limit = limit }

    /// Bytes held now.
    public var inUse: Int { state.withLock { $0.used } }

    /// Takes `bytes` from the budget, or refuses (nothing taken) when they do not fit; a
    /// refusal for `path` is kept for `drainRefusals`.
    public func reserve(_ bytes: Int, for path: String) -> Bool {
        guard bytes > 0 else { return true }
        return state.withLock { state in
            if bytes <= limit - state.used {
                state.used += bytes
                return true
            }
            if state.said.count < 4096, state.said.insert(path).inserted { state.refused.append(path) }
            return false
        }
    }

    /// Gives back what `reserve` took.
    public func release(_ bytes: Int) {
        guard bytes > 0 else { return }
        state.withLock { $0.used = max(0, $0.used - bytes) }
    }

    /// What to tell the user about the files refused since the last call, one line each.
    public func drainNotices() -> [String] {
        drainRefusals().map {
            "\($0): its compressed debug information would take the agent past its \(limit >> 20) MB "
                + "inflation budget; read without it (no source lines or hidden symbols)"
        }
    }

    /// Files refused since the last call, each once for the agent's life.
    public func drainRefusals() -> [String] {
        state.withLock { state in
            defer { state.refused.removeAll() }
            return state.refused
        }
    }
}
