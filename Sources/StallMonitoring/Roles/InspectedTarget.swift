import Foundation
import StallCapture
import StallDetection
import StallProc

/// The watched process as the sampler reads it: its `ProcessInspector` and the main thread's
/// probe files.
final class InspectedTarget: StackSampler.Target {
    let inspector: ProcessInspector
    let probe: ThreadProbeFiles

    init(inspector: ProcessInspector, probe: ThreadProbeFiles) {
        self.inspector = inspector
        self.probe = probe
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
}
