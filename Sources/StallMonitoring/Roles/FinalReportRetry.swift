import Foundation
import StallReports

/// The last revision of a stall that could not be written (a full disk). The file on disk is
/// then the "ongoing" revision, which tells a reader the stall never ended. The final one is
/// kept and tried again every few seconds while the watch goes on, and once more when it ends,
/// so a disk that gets room back gets the true report; when it never does, the warning names
/// the stale file (docs/operations.md, "A full disk").
struct FinalReportRetry {
    struct Pending {
        var id: Int
        var report: StallReport
        var folded: String?
        /// The revision on disk, if any (it keeps its name: the retry overwrites it).
        var stale: ReportPaths?
        var error: String
    }

    private(set) var pending: [Pending] = []
    private var nextAttempt = 0.0
    /// Between attempts: a full disk is seldom freed within a probe, and each attempt renders
    /// and stages every format again.
    static let interval = 5.0
    /// Stalls kept: one that falls out is said with its stale file and forgotten.
    static let capacity = 16

    var isEmpty: Bool { pending.isEmpty }

    func holds(_ id: Int) -> Bool { pending.contains { $0.id == id } }

    /// Keeps a final revision the writer refused. Returns the stall pushed out, if any.
    mutating func add(_ entry: Pending, at now: Double) -> Pending? {
        if pending.isEmpty { nextAttempt = now + Self.interval }
        pending.append(entry)
        return pending.count > Self.capacity ? pending.removeFirst() : nil
    }

    /// Tries the kept revisions when due (`final`: now, and for the last time). Returns those
    /// written and, when final, those given up on.
    mutating func retry(at now: Double, final: Bool, writer: ReportPublisher.Sink) -> (
        written: [(Pending, ReportPaths)], abandoned: [Pending]
    ) {
        guard !pending.isEmpty, final || now >= nextAttempt else { return ([], []) }
        nextAttempt = now + Self.interval
        var written: [(Pending, ReportPaths)] = []
        var left: [Pending] = []
        for var entry in pending {
            do {
                written.append((entry, try writer.write(entry.report, folded: entry.folded, stem: entry.stale?.stem)))
            } catch ReportWriteError.formatsFailed(let paths, _) {
                written.append((entry, paths))
            } catch {
                entry.error = "\(error)"
                left.append(entry)
            }
        }
        pending = final ? [] : left
        return (written, final ? left : [])
    }

    /// The warning for a stall whose final revision was never written.
    static func abandonedMessage(_ entry: Pending) -> String {
        let stale = entry.stale.map { "\($0.text) still shows it ongoing" } ?? "no report of it was written"
        return "stallagent: warning: the final report of stall #\(entry.id) could not be written "
            + "(\(entry.error)): \(stale); it ended after \(Format.seconds(entry.report.span.durationSeconds))"
    }
}
