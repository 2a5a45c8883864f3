import ReportTestSupport
import DetectionTestSupport
import Testing

@testable import StallDetection
@testable import StallReports

@Suite("Folded stacks")
struct FoldedStackRendererTests {
    @Test func rootFirstLinesWithCounts() {
        let snapshot = ReportFixtures.hangEnded()
        let folded = FoldedStackRenderer.render(snapshot) { $0.function }
        #expect(folded == "main;work;leafA 10\nmain;work;leafB 20\n")
    }

    @Test func namesAreSanitizedAndEmptyStacksSkipped() {
        var snapshot = ReportFixtures.hangEnded()
        snapshot.samples = [
            StackSample(
                time: 0, activity: .running,
                frames: [
                    DetectionScenario.frame("operator()(int; long)"), DetectionScenario.frame("bad\nname"),
                    DetectionScenario.frame(""),
                ]),
            StackSample(time: 1, activity: .running, frames: []),
        ]
        let folded = FoldedStackRenderer.render(snapshot) { $0.function }
        // The one sanitiser: a newline shows as \\x0a rather than splitting the record.
        #expect(folded == "[unknown];bad\\x0aname;operator()(int: long) 1\n")
    }

    @Test func resolverChoosesTheNames() {
        let folded = FoldedStackRenderer.render(ReportFixtures.hangEnded()) { "\($0.function) [\($0.module)]" }
        #expect(folded.split(separator: "\n").first == "main [app];work [app];leafA [app] 10")
    }
}
