import Dispatch
import Synchronization
import StallSymbols

/// A final report written while its modules' debug files were still downloading is
/// symbolicated again, in place, once they arrive. Only final reports: an ongoing stall's
/// report is written again by the monitor, whose symbolizer picks the downloads up itself.
public enum DebuginfodFollowUp {
    private static let pending = DispatchGroup()

    /// Waits (bounded) for follow-ups still running, so an agent that is exiting leaves its
    /// last reports symbolicated.
    public static func drain(timeout: Double = Debuginfod.shared.maxSeconds + 5) {
        _ = pending.wait(timeout: .now() + timeout)
    }

    package static func symbolicateWhenFetched(_ report: StallReport, jsonPath: String, debugDirectories: [String]) {
        let client = Debuginfod.shared
        guard client.enabled else { return }
        var frames = report.heaviestStack?.frames ?? []
        frames += report.lockOwner?.frames ?? []
        if let frame = report.stallFrame { frames.append(frame) }
        let waiting = Set(frames.filter { $0.file == nil }.compactMap(\.buildId)).filter { buildID in
            switch client.outcome(buildID) {
            case nil, .fetched?: return true  // in flight, or arrived after the frames were named
            case .failed?: return false
            }
        }
        guard !waiting.isEmpty else { return }
        pending.enter()
        let group = DispatchGroup()
        let arrived = Counter()
        for buildID in waiting {
            group.enter()
            client.whenDone(buildID) { outcome in
                if case .fetched = outcome { arrived.increment() }
                group.leave()
            }
        }
        group.notify(queue: .global(qos: .utility)) {
            defer { pending.leave() }
            guard arrived.value > 0 else { return }
            // A failure leaves the report as written, which is complete without the names.
            _ = try? ReportSymbolicator(debugDirectories: debugDirectories, debuginfod: .background)
                .symbolicateFile(atPath: jsonPath)
        }
    }
}

private final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    func increment() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}
