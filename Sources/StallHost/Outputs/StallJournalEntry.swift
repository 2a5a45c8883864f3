import Foundation

import StallReports
import StallMonitoring
import StallSymbols
#if canImport(Glibc)
import Glibc
#endif

/// The journal fields of a stall (catalog: systemd/stallagent.catalog). MESSAGE_IDs are
/// stable forever: operators filter and alert on them (`journalctl MESSAGE_ID=…`).
public enum StallJournalEntry {
    /// A stall crossed the threshold and is still going.
    public static let detectedMessageID = "de94fcebce394178ad0dfac6fbcedf89"
    /// A stall ended (back to idle, process died, or watch stopped); MESSAGE is its summary.
    public static let endedMessageID = "f76371fe2bd14f919cdafde10b128a9b"

    /// `target`: the watched target's label (`TargetSpec.label`) and its unit, if it is one;
    /// plain values, so the journal's format does not depend on how targets are configured.
    public static func fields(
        for event: StallMonitorEvent, target: (label: String, unit: String?)?, processName: String
    ) -> [(String, String)] {
        let report: StallReport
        let message: String
        let messageID: String
        var priority = 4
        var extra: [(String, String)] = []
        switch event {
        case .detected(let r, let path, let text):
            report = r
            message = "stallagent: " + text + (path.map { " → \($0)" } ?? "")
            messageID = detectedMessageID
            extra.append(("STALLAGENT_ONGOING", "1"))
            if let path { extra.append(("STALLAGENT_REPORT", path)) }
        case .ended(let stall, let r, let text):
            report = r
            message = "stallagent: " + text
            messageID = endedMessageID
            if stall.reason == .deadlock || stall.reason == .died || stall.terminated { priority = 3 }
            if let path = stall.reportPath { extra.append(("STALLAGENT_REPORT", path)) }
            if stall.occurrence > 1 { extra.append(("STALLAGENT_OCCURRENCE", String(stall.occurrence))) }
        }
        let reason = report.reason
        var fields: [(String, String)] = [
            ("MESSAGE", message),
            ("MESSAGE_ID", messageID),
            ("PRIORITY", String(priority)),
            ("SYSLOG_IDENTIFIER", "stallagent"),
            ("STALLAGENT_REASON_CODE", reason.hexCode),
            ("STALLAGENT_REASON", reason.name),
            ("STALLAGENT_STALL_ID", String(report.id)),
            ("STALLAGENT_PID", String(report.process.pid)),
            ("STALLAGENT_PROCESS", processName),
            ("STALLAGENT_DURATION_SEC", String(format: "%.3f", report.span.durationSeconds)),
            ("STALLAGENT_PHASE", report.phase),
        ]
        if let target {
            fields.append(("STALLAGENT_TARGET", target.label))
            if let unit = target.unit { fields.append(("STALLAGENT_UNIT", unit)) }
        }
        if let frame = report.culpritFrame {
            fields.append(("STALLAGENT_FUNCTION", frame.function ?? frame.displayName))
            if let file = frame.file { fields.append(("STALLAGENT_CULPRIT_FILE", file)) }
            if let line = frame.line { fields.append(("STALLAGENT_CULPRIT_LINE", String(line))) }
        }
        // What groups one bug across hosts and restarts (`journalctl STALLAGENT_FINGERPRINT=…`),
        // and which build it was seen in.
        fields.append(("STALLAGENT_FINGERPRINT", report.recurrence.fingerprint))
        if let buildID = report.process.buildId { fields.append(("STALLAGENT_BUILD_ID", buildID)) }
        if let stack = folded(report.heaviestStack?.frames ?? []) { fields.append(("STALLAGENT_STACK", stack)) }
        // journald attaches the target's unit and cgroup metadata to the entry for this pid,
        // but only trusts OBJECT_PID from root.
        if getuid() == 0 { fields.append(("OBJECT_PID", String(report.process.pid))) }
        return fields + extra
    }

    /// The longest `STALLAGENT_STACK` field: a journal entry is read in one line by people
    /// and shipped by the thousand; the report has the rest.
    static let stackLimit = 2048

    /// The heaviest stack folded root first (`main;g_main_loop_run;on_tick;run_sleep`), as
    /// flame-graph tools read it; cut from the root end, so the frames nearest the stall stay.
    static func folded(_ frames: [SymbolizedFrame]) -> String? {
        var names = frames.map { FoldedStackRenderer.sanitize($0.function ?? $0.displayName) }
        guard !names.isEmpty else { return nil }
        var text = names.reversed().joined(separator: ";")
        while text.utf8.count > stackLimit, names.count > 1 {
            names.removeLast()
            text = "…;" + names.reversed().joined(separator: ";")
        }
        return String(decoding: text.utf8.prefix(stackLimit), as: UTF8.self)
    }
}
