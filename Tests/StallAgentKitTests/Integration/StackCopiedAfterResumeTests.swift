import Foundation
import Testing

@testable import StallCapture
@testable import StallMonitoring
@testable import StallProc

/// A ptrace capture can copy the stack after the thread resumes, checked word by word against
/// the read just before the stop (`ThreadCapturer.captureStopped`, opt-in): a still stack must
/// come out as a copy made while stopped would. A stack that moves all the time must come out
/// whole with the default capture.
@Suite(.serialized) struct StackCopiedAfterResumeTests {
    private func names(_ inspector: ProcessInspector, _ stack: UnwoundStack) -> [String] {
        inspector.symbolizer.symbolize(stack).map { $0.function ?? "?" }
    }

    @Test func aStillStackIsCopiedAfterTheResumeAsIfStopped() throws {
        let fixture = try FixtureProcess(["deep", "120"])
        try #require(KernelState.waitUntilSpinning(fixture.pid), "the fixture never ran its loop")
        let inspector = try ProcessInspector(pid: fixture.pid)
        inspector.capturer.options.copiesStackAfterResume = true
        var copiedAfter = 0
        for _ in 0..<12 {
            let (snapshot, stack) = try inspector.captureStack(tid: fixture.pid, activity: .running)
            guard names(inspector, stack).first == "deep_leaf_spin" else { continue }  // still recursing
            #expect(snapshot.method == .ptraceStop)
            if snapshot.copiedAfterResume { copiedAfter += 1 }
            // The same stack, taken with the copy made while stopped, right after.
            let stopped = try inspector.capturer.captureStopped(
                pid: fixture.pid, tid: fixture.pid, stackEnd: inspector.stackEnd, copyingAfterResume: false)
            let reference = inspector.unwind(stopped)
            #expect(!stopped.copiedAfterResume)
            #expect(stack.end == .complete, "\(stack.end)")
            let frames = names(inspector, stack)
            #expect(frames.filter { $0 == "recurse_deep" }.count >= 120)
            #expect(frames.contains("run_deep") && frames.contains("main"))
            // Below the leaf, whose own frame may be a call deeper or shallower, every frame
            // is the same return address at the same stack address.
            #expect(
                stack.frames.dropFirst(2).map { [$0.address, $0.stackPointer] }
                    == reference.frames.dropFirst(2).map { [$0.address, $0.stackPointer] })
            usleep(20_000)
        }
        // The first capture has no read before it to check against; the others do.
        #expect(copiedAfter >= 8, "copied after the resume in \(copiedAfter) of 12")
        #expect(fixture.procStatus?.tracer == 0)
    }

    @Test func aMovingStackComesOutWhole() throws {
        let fixture = try FixtureProcess(["churn"])
        try #require(KernelState.waitUntilSpinning(fixture.pid), "the fixture never ran its loop")
        let inspector = try ProcessInspector(pid: fixture.pid)
        let churn: Set<String> = ["churn_descend", "churn_wide"]
        var copiedAfter = 0
        for _ in 0..<40 {
            let (snapshot, stack) = try inspector.captureStack(tid: fixture.pid, activity: .running)
            if snapshot.copiedAfterResume { copiedAfter += 1 }
            // The stack is whole and made of the two functions (each calling the other), under
            // run_churn and main: never frames read from a descent the thread had left. (With
            // the copy after the resume this failed once in about ten runs beside two CPU hogs:
            // ["churn_descend", "churn_wide"], .badFrame.)
            #expect(stack.end == .complete, "\(stack.end)")
            let frames = names(inspector, stack)
            let calls = frames.drop { !churn.contains($0) }.prefix { churn.contains($0) }
            #expect(zip(calls, calls.dropFirst()).allSatisfy { $0 != $1 }, "\(frames)")
            // (Between two descents the thread is in run_churn itself.)
            let rest = calls.isEmpty ? frames[...] : frames.drop { !churn.contains($0) }.drop { churn.contains($0) }
            #expect(rest.first == "run_churn" && rest.contains("main"), "\(frames)")
            usleep(10_000)
        }
        #expect(copiedAfter == 0, "the default copies while stopped")
        #expect(fixture.procStatus?.tracer == 0)
    }
}
