import Foundation
import StallDetection
import StallProc
import StallReports
import StallCapture
import StallSymbols

/// The watched process as the observer, the wait-site classifier and the sampler read it: its
/// `ProcessInspector` and the main thread's probe files.
final class InspectedTarget: MainThreadObserver.Target, StackSampler.Target, ThreadWatch.Target {
    let inspector: ProcessInspector
    let probe: ThreadProbeFiles
    /// Names frames as detection keeps them.
    private let symbolizer: SampleSymbolizer

    init(inspector: ProcessInspector, probe: ThreadProbeFiles, symbolizer: SampleSymbolizer) {
        self.inspector = inspector
        self.probe = probe
        self.symbolizer = symbolizer
    }

    var pid: Int32 { inspector.pid }
    var name: String { inspector.name }
    var symbols: SampleSymbolizer.Target { inspector }

    func awaitsPerfSample(cpuNanos: UInt64) -> Bool {
        inspector.awaitsPerfSample(tid: inspector.pid, running: probe.lastSyscall == .running, cpuNanos: cpuNanos)
    }

    func stackWithoutStop(activity: ThreadActivity) -> (snapshot: ThreadSnapshot, stack: UnwoundStack)? {
        // Running: the kernel's sample. Blocked: the copy made while it sleeps, which a
        // short call under load often leaves before the copy is done.
        probe.lastSyscall == .running
            ? inspector.sampleWithoutStop(tid: inspector.pid, probe: probe)
            : try? inspector.captureStack(tid: inspector.pid, activity: activity, probe: probe, mayStop: false)
    }

    func captureStack(of worker: ThreadProbeFiles?, activity: ThreadActivity) throws -> (snapshot: ThreadSnapshot, stack: UnwoundStack) {
        try inspector.captureStack(tid: worker?.tid ?? inspector.pid, activity: activity, probe: worker ?? probe)
    }

    func threadName(_ tid: Int32) -> String? {
        inspector.threadName(tid)
    }

    func fileKind(_ fd: Int) -> String? {
        inspector.fileKind(fd)
    }

    func tracerName(_ tracer: Int32) -> String {
        (try? ProcFS.readText("/proc/\(tracer)/comm", pid: tracer))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
    }

    func syscall() -> ProcSyscallInfo? {
        probe.syscall()
    }

    func stat() -> ProcThreadStat? {
        probe.stat()
    }

    func schedstat() -> ProcSchedstat? {
        probe.schedstat()
    }

    func reapedSignal() -> Int32? {
        ReapedExitLedger.shared.peek(pid: inspector.pid)?.signal
    }

    func children() -> String {
        let pid = inspector.pid
        return (try? ProcFS.readText("/proc/\(pid)/task/\(pid)/children", pid: pid)) ?? ""
    }

    // WaitSiteClassifier.Target

    func stopFreeStack(_ syscall: ProcSyscallInfo) -> UnwoundStack? {
        inspector.stopFreeStack(tid: inspector.pid, syscall: syscall, probe: probe)
    }

    func moduleStart(containing address: UInt64) -> UInt64? {
        inspector.modules.module(containing: address)?.start
    }

    func functionName(at address: UInt64) -> String? {
        guard let module = inspector.modules.module(containing: address) else { return nil }
        return inspector.symbolizer.symbols(for: module)?.functionName(module.moduleOffset(of: address))
    }

    func namedFrames(_ stack: UnwoundStack) -> [SampledFrame] {
        inspector.symbolizer.symbolize(stack, sourceLines: false).map(symbolizer.sampled)
    }

    func frameFunctions(_ stack: UnwoundStack) -> [String?] {
        inspector.symbolizer.symbolize(stack, sourceLines: false).map(\.function)
    }

    // ThreadWatch.Target

    func setPerfSampling(busy: Bool) {
        inspector.setPerfSampling(tid: inspector.pid, busy: busy)
    }

    func liveThreadCount() -> Int {
        ProcessInspector.liveThreads(of: inspector.pid).count
    }

    func binaryImages() -> [ReportBinaryImage] {
        inspector.modules.modules.map {
            ReportBinaryImage(
                start: $0.start, end: $0.end, name: $0.name, path: $0.path, buildId: $0.image?.buildID,
                unavailable: $0.unavailable?.rawValue)
        }
    }

    func resolveFrame(_ frame: SampledFrame, index: Int) -> SymbolizedFrame {
        symbolizer.resolve(frame, index: index, in: inspector)
    }

    func lockOwner() -> ReportLockOwner? {
        LockOwnerLookup.owner(from: inspector.pid, in: inspector)
    }

    func statIdentity() -> (name: String, startStack: UInt64?)? {
        probe.stat().map { ($0.name, $0.startStack) }
    }

    func releaseProbeFiles() {
        probe.release()
    }
}
