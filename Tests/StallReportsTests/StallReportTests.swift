import ReportTestSupport
import DetectionTestSupport
import Foundation
import Testing

@testable import StallDetection
@testable import StallCapture
@testable import StallReports
@testable import StallSymbols

@Suite("StallReport model")
struct StallReportTests {
    private typealias F = ReportFixtures

    @Test func endedHangCarriesTheSnapshotFaithfully() throws {
        let snapshot = F.hangEnded()
        let report = StallReport(snapshot: snapshot, context: F.context())
        #expect(report.schemaVersion == 1)
        #expect(report.kind == "stall")
        #expect(report.id == snapshot.id)
        #expect(report.reason == .hang)
        #expect(report.cause == .hang)
        #expect(report.phase == "loop")
        #expect(report.span.ongoing == false)
        #expect(report.span.ending == "returnedToIdle")
        #expect(abs(report.span.durationSeconds - 1.5) < 1e-9)
        #expect(report.span.thresholdSeconds == 1.0)
        #expect(report.samples.count == snapshot.sampleCount)
        #expect(report.samples.intervalSeconds == 0.05)
        #expect(report.samples.dropped == 0)
        #expect(abs(report.stateBreakdown.onCPU.fraction - 1) < 1e-9)
        #expect(report.recurrence.fingerprint == snapshot.fingerprint)
        #expect(report.recurrence.occurrence == 1)
        #expect(report.span.startTime.timeIntervalSince1970 == snapshot.startTime + F.wallClockOffset)
        #expect(report.span.endTime.timeIntervalSince1970 == snapshot.endTime + F.wallClockOffset)
        #expect(report.description == "main thread busy on CPU for 1.50 s (threshold 1.00 s), not terminated")
    }

    @Test func framesAreResolvedAtTheirStackIndex() throws {
        let report = StallReport(snapshot: F.hangEnded(), context: F.context())
        let heaviest = try #require(report.heaviestStack)
        #expect(heaviest.frames.map(\.function) == ["leafB", "work", "main"])
        #expect(heaviest.frames.map(\.index) == [0, 1, 2])
        #expect(heaviest.frames[0].file == "leafB.c")
        #expect(heaviest.samples == 20)
        #expect(heaviest.totalSamples == 30)
        let stall = try #require(report.stallFrame)
        #expect(stall.function == "work")
        #expect(stall.index == 1)
        #expect(stall.buildId == "9f1cabcdef")
    }

    @Test func binaryImagesAreOnlyTheModulesFramesUse() {
        let hang = StallReport(snapshot: F.hangEnded(), context: F.context())
        #expect(hang.binaryImages.map(\.name) == ["app"])
        let lock = StallReport(snapshot: F.lockEnded(), context: F.context(lockOwner: F.holder))
        #expect(lock.binaryImages.map(\.name) == ["app", "libc.so.6"])
    }

    @Test func ongoingStallSaysSo() {
        let report = StallReport(snapshot: F.hangStarted(), context: F.context())
        #expect(report.span.ongoing)
        #expect(report.span.ending == nil)
        #expect(report.description.hasPrefix("main thread busy on CPU for 1."))
        #expect(report.description.hasSuffix("(threshold 1.00 s), ongoing"))
    }

    @Test func lockNamesTheOwner() {
        let report = StallReport(snapshot: F.lockEnded(), context: F.context(lockOwner: F.holder))
        #expect(report.reason == .lock)
        #expect(report.reason.hexCode == "0xdead10cc")
        #expect(report.deadlock == false)
        #expect(
            report.description
                == "main thread waiting on a lock held by thread 1235 \"holder\" for 1.30 s (threshold 1.00 s), not terminated")
    }

    @Test func deadlockNamesTheCycle() {
        var owner = F.holder
        owner.waitChain = [F.pid, 1235, F.pid]
        owner.deadlock = true
        owner.detail = "waiting on lock 0x5555000010"
        let report = StallReport(snapshot: F.deadlocked(), context: F.context(lockOwner: owner))
        #expect(report.reason == .deadlock)
        #expect(report.deadlock)
        #expect(report.span.ongoing)
        #expect(
            report.description
                == "main thread deadlocked with thread 1235 \"holder\" (wait-for cycle 1234 → 1235 → 1234) for 1.29 s (threshold 1.00 s), ongoing"
        )
    }

    @Test func deathKeepsTheCause() {
        let report = StallReport(
            snapshot: F.diedWhileHanging(),
            context: F.context(termination: "terminated by stallagent with SIGABRT after 1.60 s"))
        #expect(report.reason == .died)
        #expect(report.cause == .hang)
        #expect(report.span.ending == "targetDied")
        #expect(report.termination == "terminated by stallagent with SIGABRT after 1.60 s")
        #expect(
            report.description
                == "main thread busy on CPU for 1.60 s (threshold 1.00 s), terminated by stallagent with SIGABRT after 1.60 s")
        let untouched = StallReport(snapshot: F.diedWhileHanging(), context: F.context())
        #expect(untouched.description.hasSuffix(", then the process died"))
    }

    @Test func launchPhaseUsesTheLaunchThreshold() {
        var scenario = DetectionScenario()
        scenario.run(.running, for: 10.5)
        let report = StallReport(snapshot: scenario.started[0], context: F.context())
        #expect(report.phase == "launch")
        #expect(report.description.contains("during launch for 10."))
        #expect(report.description.contains("(launch threshold 10.00 s)"))
    }

    @Test func onDemandSnapshotOutsideAStall() {
        var scenario = DetectionScenario.inLoop()
        let sample = StackSample(time: scenario.time, activity: .idle, frames: DetectionScenario.stack("epoll_wait", "main"))
        let snapshot = scenario.detector.captureSnapshot(at: scenario.time, idleSample: sample)
        let report = StallReport(snapshot: snapshot, context: F.context())
        #expect(report.kind == "snapshot")
        #expect(report.reason == .snapshot)
        #expect(report.reason.hexCode == "0xbaaaaaad")
        #expect(report.description == "on-demand snapshot; main thread not in a busy episode")
        #expect(report.heaviestStack?.frames.first?.function == "epoll_wait")
    }

    @Test func culpritSkipsSystemLibraryFrames() {
        let report = StallReport(snapshot: F.lockEnded(), context: F.context())
        #expect(report.stallFrame?.function == "__futex_abstimed_wait_common")
        #expect(report.culpritFrame?.function == "lock_contention")
    }

    /// Node with --perf-basic-prof: `Date.now()` inside the script's busy loop must not make
    /// V8's clock the culprit; a native addon called by the script stays the culprit.
    @Test func culpritIsTheScriptFunctionNotTheRuntimeServingIt() {
        func frame(_ function: String?, _ module: String?) -> SymbolizedFrame {
            SymbolizedFrame(
                index: 0, address: 0x1000, stackPointer: 0, module: module, modulePath: nil, buildId: nil,
                moduleOffset: nil, function: function, functionOffset: nil, approximate: false)
        }
        let runtime = [
            frame("clock_gettime", "libc.so.6"), frame("v8::base::Time::Now()", "node"),
            frame("Builtins_CallApiCallback", "node"), frame("LazyCompile:*burnCpu /srv/app.js:3", nil),
            frame("Builtins_JSEntry", "node"), frame("node::Start(int, char**)", "node"), frame("main", "node"),
        ]
        #expect(StallReport.culprit(in: runtime)?.function == "LazyCompile:*burnCpu /srv/app.js:3")
        let addon = [
            frame("hash_block", "addon.node"), frame("Builtins_CallApiCallback", "node"),
            frame("LazyCompile:*handler /srv/app.js:9", nil), frame("main", "node"),
        ]
        #expect(StallReport.culprit(in: addon)?.function == "hash_block")
        let native = [frame("nanosleep", "libc.so.6"), frame("work", "app"), frame("main", "app")]
        #expect(StallReport.culprit(in: native)?.function == "work")
    }
}
