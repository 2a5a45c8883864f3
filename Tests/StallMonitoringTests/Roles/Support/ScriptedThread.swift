@testable import StallCapture
import StallDetection
@testable import StallProc
import StallReports

@testable import StallMonitoring
@testable import StallSymbols

/// A main thread whose life the test writes: asleep in a wait, running a stack of its work, or
/// gone. It is everything a `ThreadWatch` reads of the process — its /proc files, its stacks
/// with or without a stop, the symbols that name them — with the process itself (its name,
/// stack base and maps) kept by a `ScriptedProcess`, so an exec scripted there shows here.
final class ScriptedThread: MainThreadObserver.Target, StackSampler.Target, ThreadWatch.Target {
    enum Doing {
        /// Blocked in the system call `ProcSyscallInfo` names (see `FakeThread.wait`).
        case waiting(ProcSyscallInfo)
        /// On the CPU, in the functions given innermost first.
        case running([String])
        case gone
    }

    let process: ScriptedProcess
    /// The waits' stacks and the functions at their addresses.
    let waits = WaitSiteClassifierTests.FakeThread()
    private let symbolTable = SampleSymbolizerTests.FakeSymbols()
    private(set) var doing: Doing = .running(["main"])
    private(set) var cpuNanos: UInt64 = 0
    /// What the watch did to the thread.
    private(set) var stops = 0
    private(set) var stopFreeSamples = 0
    private(set) var perfSampling: [Bool] = []
    private(set) var probeFileReleases = 0

    init(process: ScriptedProcess) {
        self.process = process
    }

    var pid: Int32 { process.pid }
    var name: String { process.name }
    var symbols: SampleSymbolizer.Target { symbolTable }

    /// From now on the thread does `doing`; its samples name `functions` (innermost first,
    /// in the program's module) — for a wait, the callers of libc's wrapper.
    func start(_ doing: Doing) {
        self.doing = doing
        var frames: [(function: String, module: String)]
        switch doing {
        case .running(let names): frames = names.map { ($0, "app") }
        case .waiting(let syscall):
            // libc's wrapper, then the program's callers.
            let stack = syscall.stackPointer.flatMap { waits.stacks[$0] } ?? UnwoundStack(frames: [], end: .complete)
            frames = waits.namedFrames(stack).map { ($0.function, $0.module) }
        case .gone: frames = []
        }
        symbolTable.withoutLines = frames.enumerated().map { index, frame in
            let path = frame.module == "app" ? "/usr/bin/app" : "/usr/lib/x86_64-linux-gnu/\(frame.module)"
            return SymbolizedFrame(
                index: index, address: 0x40_1000 + UInt64(index) * 0x100, stackPointer: 0x7ffd_0000 + UInt64(index) * 0x40,
                module: frame.module, modulePath: path, buildId: nil, moduleOffset: 0x1000 + UInt64(index) * 0x100,
                function: frame.function, functionOffset: 0x10, approximate: false)
        }
    }

    /// 10 ms pass: a running thread spends them on the CPU.
    func tick() {
        if case .running = doing { cpuNanos += 10_000_000 }
    }

    private func stack(_ method: ThreadSnapshot.Method) -> (snapshot: ThreadSnapshot, stack: UnwoundStack) {
        var syscall: ProcSyscallInfo?
        if case .waiting(let info) = doing { syscall = info }
        let snapshot = ThreadSnapshot(
            pid: pid, tid: pid, registers: RegisterFile(), stackStart: 0, stack: [], method: method, pauseNanos: 40_000,
            syscall: syscall, timeNanos: 0)
        return (snapshot, UnwoundStack(frames: [UnwoundFrame(address: 0x40_1000, stackPointer: 0x7ffd_0000, isSignalFrame: false)], end: .complete))
    }

    // MainThreadObserver.Target

    func syscall() -> ProcSyscallInfo? {
        switch doing {
        case .waiting(let info): info
        case .running: .running
        case .gone: nil
        }
    }

    func stat() -> ProcThreadStat? {
        let state: Character
        switch doing {
        case .waiting: state = "S"
        case .running: state = "R"
        case .gone: return nil
        }
        var stat = ProcThreadStat(state: state, name: process.comm, ppid: 1, userTicks: 0, systemTicks: 0, startTicks: 0, processor: 0)
        stat.startStack = process.startStack
        return stat
    }

    func schedstat() -> ProcSchedstat? { ProcSchedstat(cpuNanos: cpuNanos, runQueueNanos: 0, timeslices: 0) }
    func fileKind(_ fd: Int) -> String? { nil }
    func reapedSignal() -> Int32? { nil }
    func children() -> String { "" }

    func stopFreeStack(_ syscall: ProcSyscallInfo) -> UnwoundStack? { waits.stopFreeStack(syscall) }
    func moduleStart(containing address: UInt64) -> UInt64? { waits.moduleStart(containing: address) }
    func functionName(at address: UInt64) -> String? { waits.functionName(at: address) }
    func namedFrames(_ stack: UnwoundStack) -> [SampledFrame] { waits.namedFrames(stack) }
    func frameFunctions(_ stack: UnwoundStack) -> [String?] { waits.frameFunctions(stack) }

    // StackSampler.Target

    func awaitsPerfSample(cpuNanos: UInt64) -> Bool { false }

    func stackWithoutStop(activity: ThreadActivity) -> (snapshot: ThreadSnapshot, stack: UnwoundStack)? {
        stopFreeSamples += 1
        if case .running = doing { return stack(.perfSample) }
        return stack(.withoutStop)
    }

    func captureStack(of worker: ThreadProbeFiles?, activity: ThreadActivity) throws -> (snapshot: ThreadSnapshot, stack: UnwoundStack) {
        stops += 1
        return stack(.ptraceStop)
    }

    func threadName(_ tid: Int32) -> String? { nil }
    func tracerName(_ tracer: Int32) -> String { "?" }

    // ThreadWatch.Target

    func setPerfSampling(busy: Bool) {
        if perfSampling.last != busy { perfSampling.append(busy) }
    }
    func liveThreadCount() -> Int { 0 }
    func binaryImages() -> [ReportBinaryImage] {
        [ReportBinaryImage(start: 0x40_0000, end: 0x48_0000, name: "app", path: "/usr/bin/app", buildId: "b1d", unavailable: nil)]
    }
    func resolveFrame(_ frame: SampledFrame, index: Int) -> SymbolizedFrame {
        SymbolizedFrame(
            index: index, address: frame.address, stackPointer: frame.cfa, module: frame.module, modulePath: nil, buildId: nil,
            moduleOffset: nil, function: frame.function, functionOffset: 0, approximate: false)
    }
    func lockOwner() -> ReportLockOwner? { nil }
    func statIdentity() -> (name: String, startStack: UInt64?)? { (process.comm, process.startStack) }
    func releaseProbeFiles() { probeFileReleases += 1 }
}
