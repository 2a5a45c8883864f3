import ReportTestSupport
import Testing

@testable import StallDetection
@testable import StallMonitoring
import StallReports

/// Whether a stall gets a report, and where its lines go: to the host agent's events when it
/// takes them, else to the log (terminal-safe) unless quiet. Stalls from a real detector
/// (`ReportFixtures`).
@Suite struct StallAnnouncerTests {
    final class Outputs {
        var lines: [String] = []
        var events: [StallMonitorEvent] = []
        var wallTime = 1_000.0
    }

    static func announcer(_ outputs: Outputs, quiet: Bool = false, minimumInterval: Double = 0, events: Bool = false) -> StallAnnouncer {
        let announcer = StallAnnouncer(
            fingerprints: StallFingerprintBook(), quiet: quiet, minimumReportInterval: minimumInterval,
            log: { outputs.lines.append($0) }, wallClock: { outputs.wallTime })
        if events { announcer.events = { outputs.events.append($0) } }
        return announcer
    }

    static let snapshot = ReportFixtures.hangStarted()
    static let report = StallReport(snapshot: snapshot, context: ReportFixtures.context())

    /// Occurrences 1, 2, 3, 5 … get reports; within the minimum interval of the last report
    /// (by the wall clock given), none.
    @Test func theBookDecidesWhetherAStallGetsAReport() {
        let outputs = Outputs()
        let announcer = Self.announcer(outputs)
        let writes = (1...5).map { _ in announcer.decide(Self.snapshot).shouldWriteReport }
        #expect(writes == [true, true, true, false, true])
        #expect(announcer.fingerprints.entries[Self.snapshot.fingerprint]?.occurrences == 5)
        let limited = Self.announcer(outputs, minimumInterval: 60)
        #expect(limited.decide(Self.snapshot).shouldWriteReport)
        outputs.wallTime += 30
        #expect(!limited.decide(Self.snapshot).shouldWriteReport, "30 s after the last report")
        outputs.wallTime += 31
        #expect(limited.decide(Self.snapshot).shouldWriteReport)
    }

    /// To the events: the report's path only when it got one (not even asked otherwise), the
    /// line without the log's prefix; nothing to the log.
    @Test func aDetectedStallGoesToTheEventsWhenTaken() throws {
        let outputs = Outputs()
        let announcer = Self.announcer(outputs, events: true)
        let written = StallFingerprintBook.Decision(fingerprint: "f", occurrence: 1, shouldWriteReport: true)
        announcer.detected(
            Self.snapshot, Self.report, decision: written, reportPath: { "/r/stall-1.txt" }, name: "app", pid: 42, thread: "main thread")
        var asked = false
        let skipped = StallFingerprintBook.Decision(fingerprint: "f", occurrence: 4, shouldWriteReport: false)
        announcer.detected(
            Self.snapshot, Self.report, decision: skipped,
            reportPath: {
                asked = true
                return "/r/stall-2.txt"
            }, name: "app", pid: 42, thread: "main thread")
        #expect(!asked)
        #expect(outputs.lines.isEmpty)
        try #require(outputs.events.count == 2)
        guard case .detected(_, let path, let message) = outputs.events[0], case .detected(_, let skippedPath, let skippedMessage) = outputs.events[1]
        else {
            Issue.record("not detected events")
            return
        }
        #expect(path == "/r/stall-1.txt")
        #expect(message.hasPrefix("stall #\(Self.snapshot.id) in app[42] detected: main thread "))
        #expect(message.hasSuffix(" so far"))
        #expect(skippedPath == nil)
        #expect(skippedMessage == message + " (seen before: 4×)")
    }

    /// To the log, terminal-safe and prefixed; quiet says nothing.
    @Test func aDetectedStallGoesToTheLogUnlessQuiet() {
        let outputs = Outputs()
        let decision = StallFingerprintBook.Decision(fingerprint: "f", occurrence: 1, shouldWriteReport: true)
        Self.announcer(outputs).detected(
            Self.snapshot, Self.report, decision: decision, reportPath: { nil }, name: "ap\u{1b}[2Jp", pid: 42,
            thread: "thread t\u{1b}[2J [43], which the main thread waits for,")
        #expect(outputs.lines.count == 1)
        #expect(outputs.lines.first?.hasPrefix("stallagent: stall #\(Self.snapshot.id) in ") == true)
        #expect(outputs.lines.first?.contains("\u{1b}") == false)
        Self.announcer(outputs, quiet: true).detected(
            Self.snapshot, Self.report, decision: decision, reportPath: { nil }, name: "app", pid: 42, thread: "main thread")
        #expect(outputs.lines.count == 1)
        #expect(outputs.events.isEmpty)
    }

    /// The summary line goes to the log (before the summary records the stall) or, after it,
    /// to the events: never both.
    @Test func anEndedStallIsSaidOnce() {
        let ended = ReportFixtures.hangEnded()
        let report = StallReport(snapshot: ended, context: ReportFixtures.context())
        let stall = StallLedger().stall(ended, report)
        let line = StallSummaryLine.render(report, reportPath: "/r/stall-1.txt")

        let logged = Outputs()
        let toLog = Self.announcer(logged)
        toLog.logEnded(report, reportPath: "/r/stall-1.txt")
        toLog.sendEnded(stall, report, reportPath: "/r/stall-1.txt")
        #expect(logged.lines == [line])
        #expect(logged.events.isEmpty)

        let sent = Outputs()
        let toEvents = Self.announcer(sent, events: true)
        toEvents.logEnded(report, reportPath: "/r/stall-1.txt")
        toEvents.sendEnded(stall, report, reportPath: "/r/stall-1.txt")
        #expect(sent.lines.isEmpty)
        guard case .ended(let sentStall, _, let message) = sent.events.first else {
            Issue.record("no ended event")
            return
        }
        #expect(message == line)
        #expect(sentStall.id == ended.id)

        let quiet = Outputs()
        let silent = Self.announcer(quiet, quiet: true)
        silent.logEnded(report, reportPath: nil)
        silent.sendEnded(stall, report, reportPath: nil)
        #expect(quiet.lines.isEmpty)
    }
}
