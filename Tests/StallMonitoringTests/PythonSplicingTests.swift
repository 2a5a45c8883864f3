import Foundation
import Testing

@testable import StallDetection
@testable import StallCapture
@testable import StallReports
@testable import StallMonitoring
@testable import StallSymbols

/// Where Python frames go in a native stack, and what culprits, stall frames and fingerprints
/// make of them (pure: no process).
@Suite struct PythonSplicingTests {
    func native(_ names: [String]) -> [SymbolizedFrame] {
        names.enumerated().map { index, name in
            SymbolizedFrame(
                index: index, address: 0x1000 + UInt64(index), stackPointer: 0x7000 + UInt64(index) * 16,
                module: name.hasPrefix("clock") ? "libc.so.6" : "libpython3.12.so", modulePath: nil, buildId: nil,
                moduleOffset: 0x10, function: name, functionOffset: 4, approximate: false)
        }
    }

    func py(_ name: String, line: Int, frame: UInt64) -> PythonFrame {
        PythonFrame(name: name, qualifiedName: name, file: "/app/x.py", line: line, firstLine: 1, instruction: 0xa000 + frame, frameAddress: frame)
    }

    @Test func eachEvaluatorGetsItsActivation() {
        let stack = native(["clock_nanosleep", "time_sleep", "_PyEval_EvalFrameDefault", "task_step", "_PyEval_EvalFrameDefault", "main", "_start"])
        let python = PythonStack(
            activations: [
                [py("handler", line: 4, frame: 1), py("handle", line: 16, frame: 2)], [py("run", line: 9, frame: 3), py("<module>", line: 20, frame: 4)],
            ],
            note: nil, version: "3.12")
        let spliced = PythonStackSplicer.splice(stack, python)
        #expect(
            spliced.map { $0.function ?? "?" } == [
                "clock_nanosleep", "time_sleep", "handler", "handle", "_PyEval_EvalFrameDefault", "task_step", "run", "<module>",
                "_PyEval_EvalFrameDefault", "main", "_start",
            ])
        #expect(spliced.map(\.index) == Array(0..<11))
        #expect(spliced[2].isPython && spliced[2].line == 4 && spliced[2].file == "/app/x.py")
        #expect(spliced[2].displayName == "handler")
        #expect(StackTextRenderer.lines([spliced[2]]).first?.hasSuffix("handler (x.py:4)") == true)
    }

    @Test func leftoverActivationsGoBelowAShortNativeStack() {
        // The unwind ended inside the first evaluator: the outer activation is not lost.
        let stack = native(["time_sleep", "_PyEval_EvalFrameDefault"])
        let python = PythonStack(activations: [[py("inner", line: 1, frame: 1)], [py("<module>", line: 2, frame: 2)]], note: nil, version: "3.11")
        #expect(PythonStackSplicer.splice(stack, python).map { $0.function ?? "?" } == ["time_sleep", "inner", "_PyEval_EvalFrameDefault", "<module>"])
        #expect(PythonStackSplicer.splice(stack, PythonStack(activations: [], note: "x", version: "3.11")).count == 2)
    }

    @Test func culpritStallFrameAndFingerprintPreferThePythonFrame() {
        let frames = PythonStackSplicer.splice(
            native(["clock_nanosleep", "time_sleep", "_PyEval_EvalFrameDefault", "main"]),
            PythonStack(activations: [[py("slow", line: 3, frame: 0x50), py("<module>", line: 9, frame: 0x60)]], note: nil, version: "3.12"))
        let sampled = frames.map { SampleSymbolizer.sampledFrame($0, appFrames: AppFrameRule()) }
        #expect(sampled[2].isInterpreted && sampled[2].function == "slow" && sampled[2].cfa == 0x50)
        var tracker = StallFrameTracker()
        tracker.add(sampled)
        tracker.add(sampled)
        // clock_nanosleep is in every sample too and is innermost, but the program's function wins.
        #expect(tracker.stallFrame?.function == "slow")
        // The interpreter's C frames above the Python frame change between samples of the same stall.
        var other = sampled
        other[1].function = "pysleep"
        #expect(StallFingerprint.make(reason: .blocked, frames: sampled) == StallFingerprint.make(reason: .blocked, frames: other))
    }

    @Test func pythonFramesRoundTripThroughJSON() throws {
        let frame = PythonStackSplicer.symbolized(py("handler", line: 4, frame: 8))
        let data = try JSONEncoder().encode(frame)
        #expect(String(decoding: data, as: UTF8.self).contains("\"language\":\"python\""))
        #expect(try JSONDecoder().decode(SymbolizedFrame.self, from: data) == frame)
    }
}
