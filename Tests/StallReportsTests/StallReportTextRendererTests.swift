import ReportTestSupport
import DetectionTestSupport
import Foundation
import Testing

@testable import StallDetection
@testable import StallReports

@Suite("StallReport text rendering")
struct StallReportTextRendererTests {
    private typealias F = ReportFixtures

    private func lines(_ report: StallReport) -> [String] {
        StallReportTextRenderer.render(report).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    @Test func headerReadsLikeAWatchdogReport() throws {
        let report = StallReport(snapshot: F.hangEnded(), context: F.context())
        let text = lines(report)
        #expect(text.contains("Process:             stall-fixtures [1234]"))
        #expect(text.contains("Path:                /opt/app/bin/app"))
        #expect(text.contains("Build ID:            9f1cabcdef"))
        #expect(text.contains("Date/Time:           " + ReportTime.human(report.span.startTime)))
        #expect(text.contains("Termination Reason:  Namespace STALLAGENT, Code 0x8badf00d (hang)"))
        #expect(text.contains("Description:         main thread busy on CPU for 1.50 s (threshold 1.00 s), not terminated"))
        #expect(text.contains("Duration:            1.50 s          Duration Sampled: 1.45 s (30 samples, 50 ms interval)"))
        #expect(text.contains("Main Thread:         running 100 %"))
        #expect(text.contains("Stall Frame:         work + 0x11 (app) [work.c:101]"))
        #expect(!text.contains { $0.hasPrefix("Cause:") })
        #expect(
            text.contains(
                "Agent:               30 samples (28 with a stop, 2 without, 0 failed), target paused p50 41 µs / p99 95 µs / total 1.3 ms, probe every 10 ms"))
    }

    @Test func heaviestStackAndCallTree() throws {
        let text = lines(StallReport(snapshot: F.hangEnded(), context: F.context()))
        let start = try #require(text.firstIndex(of: "Heaviest Stack (20 of 30 samples):"))
        #expect(text[start + 1] == "Thread 0 Stalled:: main [tid 1234]")
        #expect(text[start + 2] == "0   app       0x0000000000400000 leafB + 16 (leafB.c:100)")
        #expect(text[start + 4].hasPrefix("2   app       0x0000000000400020 main + 18"))
        let tree = try #require(text.firstIndex { $0.hasPrefix("Call Tree (30 samples") })
        #expect(text[tree + 1] == "  30 main  (app)")
        #expect(text[tree + 2] == "    30 work  (app)")
        #expect(text[tree + 3] == "      20 leafB  (app) [self 20]")
        #expect(text[tree + 4] == "      10 leafA  (app) [self 10]")
        let images = try #require(text.firstIndex(of: "Binary Images:"))
        #expect(text[images + 1] == "  0x400000 - 0x480000 app <9f1cabcdef> /opt/app/bin/app")
        #expect(text[images + 2] == "")
    }

    @Test func lockOwnerSectionShowsTheOwnersStack() throws {
        var owner = F.holder
        owner.waitChain = [F.pid, 1235, F.pid]
        owner.deadlock = true
        let text = lines(StallReport(snapshot: F.deadlocked(), context: F.context(lockOwner: owner)))
        #expect(text.contains("Termination Reason:  Namespace STALLAGENT, Code 0xdead10cc (deadlock)"))
        let start = try #require(text.firstIndex(of: "Lock Owner:          thread 1235 \"holder\": blocked in nanosleep"))
        #expect(text[start + 1] == "Wait-For Chain:      1234 → 1235 → 1234 (deadlock)")
        #expect(text[start + 2] == "Thread 1 Lock Owner:: holder [tid 1235]")
        #expect(text[start + 3].contains("clock_nanosleep + 16"))
        #expect(text[start + 4].contains("hold_lock + 17 (hold_lock.c:101)"))
        #expect(
            text.contains("End Time:            " + ReportTime.human(StallReport(snapshot: F.deadlocked(), context: F.context()).span.endTime) + " (ongoing)"))
        #expect(text.contains { $0.hasPrefix("Main Thread:         lock wait 100 %") })
    }

    @Test func diedShowsTheCauseAndTermination() {
        let termination = "terminated by stallagent with SIGABRT after 1.60 s"
        let text = lines(StallReport(snapshot: F.diedWhileHanging(), context: F.context(termination: termination)))
        #expect(text.contains("Termination Reason:  Namespace STALLAGENT, Code 0xdeadfa11 (died)"))
        #expect(text.contains("Cause:               0x8badf00d (hang)"))
        #expect(text.contains("Termination:         " + termination))
    }

    @Test func emptySnapshotRendersPlaceholders() {
        var scenario = DetectionScenario.inLoop()
        var context = F.context()
        context.process.commandLine = ["app", "--name", "two words", "it's"]
        let report = StallReport(snapshot: scenario.detector.captureSnapshot(at: scenario.time), context: context)
        let text = lines(report)
        #expect(text.contains("Command Line:        app --name 'two words' 'it'\\''s'"))
        #expect(text.contains("Termination Reason:  Namespace STALLAGENT, Code 0xbaaaaaad (snapshot)"))
        #expect(text.contains("Main Thread:         no busy time recorded"))
        #expect(text.contains("Stall Frame:         none (no frame was in every sample)"))
        #expect(text.contains("Heaviest Stack: none (no stack samples)"))
        #expect(text.contains("  (no samples)"))
        #expect(text.contains("  (none known)"))
    }

    @Test func callTreeIsPrunedAndSaysSo() {
        // 200 levels of recursion under main, then 10 siblings of which only a few are heavy.
        var samples: [StackSample] = []
        let recursion = (0..<200).map { DetectionScenario.frame("recurse", cfa: 0x8000 - UInt64($0) * 0x40) }
        for (index, leaf) in ["hot", "warm", "l1", "l2", "l3", "l4", "l5", "l6", "l7", "l8"].enumerated() {
            let weight = index == 0 ? 60 : index == 1 ? 30 : 1
            for _ in 0..<weight {
                samples.append(
                    StackSample(time: 0, activity: .running, frames: [DetectionScenario.frame(leaf)] + recursion + [DetectionScenario.frame("main")]))
            }
        }
        let tree = CallTreeNode.build(from: samples)
        let text = CallTreeTextRenderer.lines(tree)
        #expect(text.count < 20)
        #expect(text[0] == "  98 main  (app)")
        // 202 frames exceed the tree's depth limit: the middle is folded, the leaves kept.
        #expect(text[1] == "    98 recurse  (app) ×62 (recursion)")
        #expect(text[2] == "      98 … 107 levels folded")
        #expect(text[3] == "        98 recurse  (app) ×31 (recursion)")
        #expect(text[4] == "          60 hot  (app) [self 60]")
        #expect(text[5] == "          30 warm  (app) [self 30]")
        #expect(text[6] == "          … 8 more branches (8 samples)")

        var deep = CallTreeTextRenderer.Limits()
        deep.maxDepth = 3
        let chain = (0..<10).map { DetectionScenario.frame("f\($0)", cfa: UInt64($0)) }
        let cut = CallTreeTextRenderer.lines(CallTreeNode.build(from: [StackSample(time: 0, activity: .running, frames: chain)]), limits: deep)
        #expect(cut.count == 4)
        #expect(cut[3] == "        … deeper frames omitted (1 samples)")
        #expect(CallTreeTextRenderer.header(tree).contains("folded"))
    }
}
