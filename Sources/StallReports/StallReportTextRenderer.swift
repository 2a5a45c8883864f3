import Foundation

/// The watchdog-style text of a stall report (docs/report-schema.md): a header block a reader can take
/// in at a glance, then the heaviest stack, the call tree, the lock owner, the binary images
/// and what watching cost. It carries the same content as the JSON.
public enum StallReportTextRenderer {
    public static func render(_ r: StallReport) -> String {
        var out: [String] = []
        out += header(r)
        out.append("")
        out += heaviestStack(r)
        out.append("")
        out.append(CallTreeTextRenderer.header(r.callTree))
        let tree = CallTreeTextRenderer.lines(r.callTree)
        out += tree.isEmpty ? ["  (no samples)"] : tree
        if r.samples.dropped > 0 {
            out.append("  (\(r.samples.dropped) earlier samples were dropped from the ring and are not in the tree)")
        }
        if let owner = r.lockOwner {
            out.append("")
            out += lockOwner(owner, deadlock: r.deadlock)
        }
        out.append("")
        out.append("Binary Images:")
        if r.binaryImages.isEmpty { out.append("  (none known)") }
        for image in r.binaryImages {
            out.append(
                "  0x\(String(image.start, radix: 16)) - 0x\(String(image.end, radix: 16)) \(image.name) "
                    + "<\(image.buildId ?? "no build-id")> \(image.path)"
                    + (image.unavailable.map { " (unavailable: \($0))" } ?? ""))
        }
        out.append("")
        out.append(field("Agent:", agent(r.agent)))
        // Names, paths and argv come from the target: one sanitiser for every line.
        return TerminalSanitizer.lines(out).joined(separator: "\n") + "\n"
    }

    private static func header(_ r: StallReport) -> [String] {
        var out: [String] = []
        out.append(field("Process:", "\(r.process.name) [\(r.process.pid)]"))
        if let unit = r.process.unit { out.append(field("Unit:", unit)) }
        out.append(field("Path:", r.process.path ?? "unknown"))
        out.append(field("Build ID:", r.process.buildId ?? "unknown"))
        if let argv = r.process.commandLine, !argv.isEmpty {
            out.append(field("Command Line:", argv.map(shellQuoted).joined(separator: " ")))
        }
        if !r.hostname.isEmpty { out.append(field("Hostname:", r.hostname)) }
        out.append(field("Date/Time:", ReportTime.human(r.span.startTime)))
        out.append(field("End Time:", ReportTime.human(r.span.endTime) + (r.span.ongoing ? " (ongoing)" : "")))
        let revision = r.revision > 0 ? ", revision \(r.revision) (\(r.trigger))" : ""
        out.append(field("Report:", "\(r.kind) #\(r.id)\(revision)"))
        let seen = r.recurrence.occurrence > 1 ? " (seen \(r.recurrence.occurrence) times)" : " (first occurrence)"
        out.append(field("Fingerprint:", r.recurrence.fingerprint + seen))
        out.append(field("Termination Reason:", "Namespace STALLAGENT, Code \(r.reason.hexCode) (\(r.reason.name))"))
        if r.cause != r.reason { out.append(field("Cause:", "\(r.cause.hexCode) (\(r.cause.name))")) }
        out.append(field("Phase:", r.phase))
        out.append(field("Description:", r.description))
        if let termination = r.termination { out.append(field("Termination:", termination)) }
        let interval = ReportNumber.interval(r.samples.intervalSeconds)
        let sampled = ReportNumber.duration(r.samples.sampledSeconds) + " (\(r.samples.count) samples, \(interval) interval)"
        let duration = (ReportNumber.duration(r.span.durationSeconds) + (r.span.ongoing ? "+" : ""))
            .padding(toLength: 16, withPad: " ", startingAt: 0)
        out.append(field("Duration:", duration + "Duration Sampled: " + sampled))
        // A thread the main thread waited for (`Description:` says which) is not the main thread.
        out.append(field(r.thread.tid == r.process.pid ? "Main Thread:" : "Thread:", mainThread(r.stateBreakdown)))
        if let turns = r.evidence.loopTurns {
            out.append(field("Loop Turns:", turns + (r.evidence.loopTurnsNote.map { " (\($0))" } ?? "")))
        }
        if let sampling = r.evidence.sampling { out.append(field("Sampling:", sampling)) }
        let stallFrame = r.stallFrame.map(StackTextRenderer.summary) ?? "none (no frame was in every sample)"
        out.append(field("Stall Frame:", stallFrame))
        return out
    }

    private static func heaviestStack(_ r: StallReport) -> [String] {
        guard let heaviest = r.heaviestStack, !heaviest.frames.isEmpty else {
            return ["Heaviest Stack: none (no stack samples)"]
        }
        let role = r.kind == "snapshot" ? "Sampled" : "Stalled"
        // The mark is explained where it appears: a reader of one report has no manual open.
        let legend = heaviest.frames.contains { $0.inApp == true } ? "; * your code" : ""
        return [
            "Heaviest Stack (\(heaviest.samples) of \(heaviest.totalSamples) samples\(legend)):",
            "Thread 0 \(role):: \(r.thread.name) [tid \(r.thread.tid)]",
        ]
            + StackTextRenderer.lines(heaviest.frames)
    }

    private static func lockOwner(_ owner: ReportLockOwner, deadlock: Bool) -> [String] {
        var out: [String] = []
        let name = owner.name.map { " \"\($0)\"" } ?? ""
        out.append(field("Lock Owner:", "thread \(owner.tid)\(name): \(owner.detail)"))
        if owner.waitChain.count > 1 {
            let chain = owner.waitChain.map(String.init).joined(separator: " → ")
            out.append(field("Wait-For Chain:", chain + (owner.deadlock || deadlock ? " (deadlock)" : "")))
        }
        out.append("Thread 1 Lock Owner:: \(owner.name ?? "?") [tid \(owner.tid)]")
        out += owner.frames.isEmpty ? ["  (stack not captured)"] : StackTextRenderer.lines(owner.frames)
        return out
    }

    /// "running 96 %, run-queue wait 4 %": the busy states that took any time, then stopped
    /// time in seconds since it is outside the stall's duration.
    private static func mainThread(_ breakdown: ReportStateBreakdown) -> String {
        var parts = breakdown.labelledBusyShares.filter { $0.share.seconds > 0 }.map {
            "\($0.label) \(ReportNumber.percent($0.share.fraction))"
        }
        if breakdown.stopped.seconds > 0 {
            parts.append("stopped \(ReportNumber.duration(breakdown.stopped.seconds)) (not counted)")
        }
        return parts.isEmpty ? "no busy time recorded" : parts.joined(separator: ", ")
    }

    private static func agent(_ stats: ReportAgentStats) -> String {
        var text = "\(stats.samples) samples"
        text += " (\(stats.capturesWithStop) with a stop, \(stats.capturesWithoutStop) without, \(stats.failedCaptures) failed)"
        if stats.capturesWithStop > 0 {
            text +=
                ", target paused p50 \(ReportNumber.micros(stats.pauseP50Micros))"
                + " / p99 \(ReportNumber.micros(stats.pauseP99Micros))"
                + " / total \(ReportNumber.micros(stats.pauseTotalMicros))"
        } else {
            text += ", target never paused"
        }
        if stats.probeIntervalSeconds > 0 { text += ", probe every \(ReportNumber.interval(stats.probeIntervalSeconds))" }
        return text
    }

    /// Quotes an argument only when it needs it, so the line can be pasted back into a shell.
    private static func shellQuoted(_ argument: String) -> String {
        let plain = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-")
        if !argument.isEmpty && argument.allSatisfy(plain.contains) { return argument }
        return "'" + argument.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// Labels padded to one column, as watchdog reports align them.
    static func field(_ label: String, _ value: String) -> String {
        label.padding(toLength: 21, withPad: " ", startingAt: 0) + value
    }
}
