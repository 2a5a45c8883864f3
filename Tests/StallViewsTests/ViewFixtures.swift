import ReportTestSupport
import Foundation

@testable import StallDetection
@testable import StallReports
@testable import StallViews

/// Report directories written by the real `ReportWriter` from detector scenarios, for the
/// picture tests.
enum ViewFixtures {
    /// A hang (leafA 10 samples, leafB 20, under work ← main) and a lock stall with its owner,
    /// each with the folded stacks the monitor writes from the same snapshot.
    static func reports() -> [(report: StallReport, folded: String?)] {
        let hangSnapshot = ReportFixtures.hangEnded()
        var hang = StallReport(snapshot: hangSnapshot, context: ReportFixtures.context())
        hang.id = 1
        let lockSnapshot = ReportFixtures.lockEnded()
        var lock = StallReport(snapshot: lockSnapshot, context: ReportFixtures.context(lockOwner: ReportFixtures.holder))
        lock.id = 2
        lock.span.startTime = hang.span.endTime.addingTimeInterval(3)
        lock.span.endTime = lock.span.startTime.addingTimeInterval(lock.span.durationSeconds)
        return [
            (hang, FoldedStackRenderer.render(hangSnapshot) { $0.function }),
            (lock, FoldedStackRenderer.render(lockSnapshot) { $0.function }),
        ]
    }

    /// A report whose every target-controlled string is markup.
    static func hostile() -> StallReport {
        var report = StallReport(snapshot: ReportFixtures.hangEnded(), context: ReportFixtures.context())
        report.process.name = "<script>"
        report.process.commandLine = ["/opt/</script><script>window.pwned=1</script>", "<img src=x onerror=alert(1)>"]
        report.process.path = "/tmp/<b>bold</b>"
        report.callTree = rename(report.callTree) { $0 == "leafB" ? "</script><img src=x onerror=alert(2)>" : $0 }
        return report
    }

    static func rename(_ node: CallTreeNode, _ change: (String) -> String) -> CallTreeNode {
        var copy = node
        copy.function = change(node.function)
        copy.children = node.children.map { rename($0, change) }
        return copy
    }

    /// Writes the reports (and their folded stacks) as the agent does; returns the directory.
    static func directory(_ reports: [(report: StallReport, folded: String?)]) throws -> String {
        let path = ReportFixtures.temporaryDirectory()
        let writer = try ReportWriter(directory: path, requireSafeOwner: false)
        for (report, folded) in reports {
            _ = try writer.write(report, folded: folded)
        }
        return path
    }
}
