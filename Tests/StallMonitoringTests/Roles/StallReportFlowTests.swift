import StallCapture
import StallDetection
import StallProc
import StallReports
import Testing

@testable import StallMonitoring
import StallSymbols

/// A stall fed to the detector through the flow, with a fake watch and a fake writer: the
/// revisions of its report, the lines said, the turn and the stall the watch hears of, the lock
/// owner looked up at each revision and the book closed at the end.
@Suite struct StallReportFlowTests {
    final class FakeWatch: StallReportFlow.Watch {
        var owner: ReportLockOwner?
        var lookups = 0
        var turns: [Double] = []
        var recorded: [MonitorSummary.Stall] = []

        func binaryImages() -> [ReportBinaryImage] {
            [ReportBinaryImage(start: 0x1000, end: 0x9000, name: "app", path: "/usr/bin/app", buildId: "b1d", unavailable: nil)]
        }
        func resolveFrame(_ frame: SampledFrame, index: Int) -> SymbolizedFrame {
            SymbolizedFrame(
                index: index, address: 0x1000 + UInt64(index), stackPointer: 0, module: frame.module, modulePath: nil, buildId: nil,
                moduleOffset: 0, function: frame.function, functionOffset: 0, approximate: false)
        }
        func lockOwner() -> ReportLockOwner? {
            lookups += 1
            return owner
        }
        var loopTurnsNote: String? { "counted by the stack rule" }
        var samplingNote: String? { nil }
        func turnEnded(_ duration: Double) { turns.append(duration) }
        func stallRecorded(_ stall: MonitorSummary.Stall) { recorded.append(stall) }

        func statIdentity() -> (name: String, startStack: UInt64?)? { nil }
        func execBegan(at now: Double) {}
        func processRenamed(_ name: String) {}
        func execdGoProgram() {}
        func forgetOldProgram() {}
    }

    final class FakeSink: ReportPublisher.Sink {
        var reports: [StallReport] = []
        var finished: [Int] = []
        func write(_ report: StallReport, folded: String?, stem: String?) throws -> ReportPaths {
            reports.append(report)
            return ReportPaths(text: "/reports/stall-\(report.id).txt", json: "/reports/stall-\(report.id).json")
        }
        func finished(pid: Int32, id: Int) { finished.append(id) }
    }

    final class Harness {
        let watch = FakeWatch()
        let sink = FakeSink()
        let process = ScriptedProcess(comm: "app", exe: "/usr/bin/app", commandLine: ["app", "--serve"])
        var events: [StallMonitorEvent] = []
        lazy var flow: StallReportFlow = {
            let announcer = StallAnnouncer(
                fingerprints: StallFingerprintBook(), quiet: true, minimumReportInterval: 0, log: { _ in }, wallClock: { 1000 })
            announcer.events = { [unowned self] in events.append($0) }
            return StallReportFlow(
                detector: StallDetector(configuration: DetectorConfiguration(startsInLaunchPhase: false)), announcer: announcer,
                publisher: ReportPublisher(sink: sink, pid: process.pid, writeFolded: false, log: { _ in }, clock: { 0 }, followUp: { _, _ in }),
                killPolicy: nil, workers: WorkerDelegation(follower: WorkerThreadFollower(target: WorkerThreadFollowerTests.FakeTarget())),
                identity: IdentityActing(of: process, redactArgv: false, unit: nil, quiet: true, log: { _ in }), probeInterval: 0.01,
                stamp: HostStamp(wallClock: { 1000 }, monotonic: { 0 }, hostname: { Array("box".utf8) + [0] }))
        }()
        var tick = 0
        var cpuNanos: UInt64 = 0

        /// Probes every 10 ms, sampling whenever the detector asks, as the monitor does.
        func run(_ activity: ThreadActivity, for seconds: Double) {
            for _ in 0..<Int((seconds / 0.01).rounded()) {
                let now = Double(tick) * 0.01
                let observation = ThreadObservation(time: now, activity: activity, cpuNanos: cpuNanos, runQueueNanos: 0)
                flow.feed(in: watch) { $0.observe(observation) }
                if flow.detector.wantsSample(at: now) {
                    let frames = [SampledFrame(function: "compute", module: "app"), SampledFrame(function: "main", module: "app")]
                    flow.feed(in: watch) { $0.record(StackSample(time: now, activity: activity, frames: frames)) }
                }
                if activity == .running { cpuNanos += 10_000_000 }
                tick += 1
            }
        }
    }

    /// Detected, updated, ended: every revision is written (the first ongoing, the last not),
    /// the lines go out as events, and the watch hears of the turn and of the stall once.
    @Test func aStallIsReportedFromItsStartToItsEnd() throws {
        let harness = Harness()
        harness.run(.idle, for: 0.2)
        harness.run(.running, for: 1.5)
        #expect(harness.flow.openReportStem == "stall-1", "the open stall's report is kept by retention")
        harness.run(.idle, for: 0.1)

        let reports = harness.sink.reports
        #expect(reports.count >= 2)
        #expect(reports.first?.span.ongoing == true)
        #expect(reports.last?.span.ongoing == false)
        #expect(reports.allSatisfy { $0.id == 1 && $0.hostname == "box" && $0.process.name == "app" })
        #expect(reports.last?.binaryImages.map(\.name) == ["app"])
        #expect(reports.last?.agent.probeIntervalSeconds == 0.01)
        #expect(harness.events.count == 2)
        if case .detected(_, let path, let message) = harness.events.first {
            #expect(path == "/reports/stall-1.txt")
            #expect(message.contains("stall #1 in app[4242] detected: main thread"))
        } else {
            Issue.record("no detected event first")
        }
        if case .ended(let stall, _, _) = harness.events.last { #expect(stall.id == 1) } else { Issue.record("no ended event last") }
        #expect(harness.watch.recorded.map(\.id) == [1])
        #expect(harness.watch.turns.count == 1)
        #expect(abs((harness.watch.turns.first ?? 0) - 1.5) < 0.02)
        #expect(harness.sink.finished == [1], "the book is closed")
        #expect(harness.flow.openReportStem == nil)
        #expect(harness.watch.lookups == reports.count - 1, "a lock owner looked for at every revision but the last")
    }

    /// A lock owner found waiting back on the main thread makes the stall a deadlock, in the
    /// report and in the summary.
    @Test func aLockOwnerInADeadlockMarksTheStall() throws {
        let harness = Harness()
        harness.watch.owner = ReportLockOwner(tid: 4243, name: "worker", detail: "waiting on lock 0x5000", waitChain: [4242, 4243, 4242], deadlock: true)
        harness.run(.idle, for: 0.2)
        harness.run(.lockWait, for: 1.5)
        harness.run(.idle, for: 0.1)
        let last = try #require(harness.sink.reports.last)
        #expect(last.lockOwner?.tid == 4243)
        #expect(last.deadlock)
        #expect(harness.watch.recorded.first?.deadlock == true)
        #expect(harness.watch.recorded.first?.lockOwnerName == "worker")
    }

    /// An on-demand snapshot outside any stall is written without opening a book.
    @Test func aSnapshotReportIsWrittenOutsideAnyStall() {
        let harness = Harness()
        harness.run(.idle, for: 0.2)
        let (snapshot, report, path) = harness.flow.writeSnapshotReport(at: 0.2, idleSample: nil, in: harness.watch)
        #expect(path == "/reports/stall-\(report.id).txt")
        #expect(report.id == snapshot.id)
        #expect(harness.flow.publisher.ledger.reportPaths.isEmpty)
        #expect(harness.watch.recorded.isEmpty)
    }
}
