import StallDetection
import StallReports

/// What the monitor keeps about each stall between its detection and its end: whether its
/// fingerprint earns a report, where the report went and when it was first on disk, the lock
/// owner found while it waited, and any `--kill-after` termination. Reports and the summary
/// are written from this, and a watch of months sees millions of stalls, so everything is
/// dropped when a stall ends. Kept apart from the monitor so what a summary says of a stall
/// is tested without a process.
struct StallLedger {
    private(set) var decisions: [Int: StallFingerprintBook.Decision] = [:]
    private(set) var reportPaths: [Int: ReportPaths] = [:]
    private(set) var lockOwners: [Int: ReportLockOwner] = [:]
    private(set) var terminations: [Int: String] = [:]
    /// When each stall's report was first on disk (monotonic): the summary's latency.
    private(set) var firstWritten: [Int: Double] = [:]

    /// The fingerprint book's word on a stall just detected.
    mutating func open(_ id: Int, decision: StallFingerprintBook.Decision) {
        decisions[id] = decision
    }

    /// A stall without a decision (none was asked) gets its report.
    func shouldWriteReport(_ id: Int) -> Bool { decisions[id]?.shouldWriteReport ?? true }

    func occurrence(_ id: Int) -> Int { decisions[id]?.occurrence ?? 1 }

    mutating func noteWritten(_ id: Int, paths: ReportPaths) {
        reportPaths[id] = paths
    }

    /// The first time a stall's report is on disk; later revisions keep it (`now` is read
    /// only the first time).
    mutating func noteFirstWritten(_ id: Int, at now: @autoclosure () -> Double) {
        if firstWritten[id] == nil { firstWritten[id] = now() }
    }

    mutating func setLockOwner(_ owner: ReportLockOwner, for id: Int) {
        lockOwners[id] = owner
    }

    mutating func noteTermination(_ termination: String, for id: Int) {
        terminations[id] = termination
    }

    /// The report a summary line points to: none for a stall seen before, whose report was
    /// not written.
    func summaryPath(_ id: Int) -> String? {
        shouldWriteReport(id) ? reportPaths[id]?.text : nil
    }

    /// The summary's entry for a stall that ended.
    func stall(_ snapshot: StallSnapshot, _ report: StallReport) -> MonitorSummary.Stall {
        MonitorSummary.Stall(
            id: snapshot.id, reason: snapshot.deadlock ? .deadlock : snapshot.reason, phase: snapshot.phase,
            duration: snapshot.duration, startMonotonic: snapshot.startTime, endMonotonic: snapshot.endTime,
            topFunction: Self.culprit(snapshot, report),
            heaviestFunctions: snapshot.heaviestStack?.frames.map(\.function) ?? [],
            deadlock: snapshot.deadlock, lockOwnerName: lockOwners[snapshot.id]?.name,
            firstWrittenMonotonic: firstWritten[snapshot.id],
            reportPath: summaryPath(snapshot.id), occurrence: occurrence(snapshot.id),
            terminated: terminations[snapshot.id].map { !ReportTermination.isRefusal($0) } ?? false)
    }

    /// The stall is over: nothing of it stays behind.
    mutating func close(_ id: Int) {
        decisions[id] = nil
        reportPaths[id] = nil
        firstWritten[id] = nil
        terminations[id] = nil
        lockOwners[id] = nil
    }

    /// The stall line's "reason in function".
    static func describe(_ snapshot: StallSnapshot, _ report: StallReport?) -> String {
        let reason = snapshot.deadlock ? StallReason.deadlock : snapshot.causeReason
        return "\(reason.hexCode) \(reason.name) in \(culprit(snapshot, report))"
    }

    /// The frame a person should look at: the stall frame moved out of libc and the loader.
    static func culprit(_ snapshot: StallSnapshot, _ report: StallReport?) -> String {
        report?.culpritName ?? snapshot.heaviestStack?.topFunction ?? "?"
    }
}
