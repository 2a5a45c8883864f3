import Foundation
import Testing

@testable import StallCapture
@testable import StallMonitoring

/// Issue 26, item 4: a running Python thread's frames are read without a ptrace stop — its
/// frame chain read beside the kernel's sample of its native stack — and, with no kernel sample
/// to read them beside, not sampled at all in the first half of the threshold, when a busy
/// stretch is most likely a healthy turn that a stop would only slow down.
@Suite(.serialized) struct PythonStopFreeTests {
    typealias P = PythonInterpreters

    static let interpreters = [P.pyenv311, P.pyenv312, P.pyenv313, P.debian311].filter(P.has)

    /// Twenty short turns of a loop (0.15 s on CPU, under half the 1 s threshold), then one
    /// 1.6 s turn in `checkout_total` (spinning in `spin`).
    static let turns = """
        import asyncio, time

        def spin(seconds):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                pass

        def short_turn():
            spin(0.15)

        def checkout_total():
            spin(1.6)

        async def main():
            print("ready", flush=True)
            await asyncio.sleep(0.5)
            for _ in range(20):
                short_turn()
                await asyncio.sleep(0.1)
            checkout_total()
            await asyncio.sleep(0.3)

        asyncio.run(main())

        """

    private func watch(_ python: String, perfSampling: Bool) throws -> (StallMonitor, MonitorSummary) {
        let script = try P.script("turns.py", Self.turns)
        defer { try? FileManager.default.removeItem(atPath: (script as NSString).deletingLastPathComponent) }
        let target = try FixtureProcess([script], executable: URL(fileURLWithPath: python))
        defer { target.stop() }
        let run = try watchMonitor(pid: target.pid, duration: 30) {
            $0.threshold = 1
            $0.perfSampling = perfSampling
        }
        try? FileManager.default.removeItem(atPath: run.reportDirectory)
        return (run.monitor, run.summary)
    }

    private func expectOneHangInCheckout(_ summary: MonitorSummary) throws {
        #expect(summary.stallCount == 1, "\(summary.stalls.map(\.topFunction))")
        let stall = try #require(summary.stalls.first, "no stall reported")
        #expect(stall.reason == .hang || stall.reason == .starved)
        // The innermost of the script's own functions, called by the stalled one.
        #expect(stall.topFunction == "spin", "\(stall.heaviestFunctions)")
        #expect(stall.heaviestFunctions.contains("checkout_total"), "\(stall.heaviestFunctions)")
        #expect(stall.heaviestFunctions.contains("main"), "\(stall.heaviestFunctions)")
    }

    /// With the kernel's samples: no stop at all, short turns or stall, and the stall named by
    /// its Python function above the interpreter's native frames.
    @Test(
        .enabled(if: PerfSamplingTests.available, "perf_event sampling of a thread is not permitted here"),
        .enabled(if: !interpreters.isEmpty, "no CPython 3.11+ installed"), arguments: interpreters)
    func runningPythonIsSampledWithoutAStop(_ python: String) throws {
        let (monitor, summary) = try watch(python, perfSampling: true)
        try expectOneHangInCheckout(summary)
        #expect(monitor.inspector.perfSamples >= 10, "\(monitor.inspector.perfSamples) kernel samples")
        // A sample whose chain never settled, or whose activations did not match, is taken
        // with a stop once the stretch is past half the threshold: a few at most.
        #expect(summary.capturesWithStop <= 3, "\(summary.capturesWithStop) stops, \(monitor.inspector.pythonChainMisses) misses")
        #expect(summary.stalls.first?.heaviestFunctions.contains("_PyEval_EvalFrameDefault") == true)
    }

    /// Without them (perf events refused, `--no-perf-sampling`): the short turns are not
    /// sampled, and the stall is, with stops, from half the threshold on.
    @Test(.enabled(if: !interpreters.isEmpty, "no CPython 3.11+ installed"), arguments: interpreters)
    func withoutKernelSamplesShortTurnsAreNotStopped(_ python: String) throws {
        let (_, summary) = try watch(python, perfSampling: false)
        try expectOneHangInCheckout(summary)
        // 20 turns of 0.15 s would be ~60 stops at the 50 ms interval; the stall's last 1.1 s
        // gives ~22 of them.
        #expect(summary.samplesPutOff >= 20, "\(summary.samplesPutOff) samples put off")
        #expect(summary.capturesWithStop >= 5 && summary.capturesWithStop <= 30, "\(summary.capturesWithStop) stops")
    }
}
