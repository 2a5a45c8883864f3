import Foundation
import StallDetection
import StallProc
import StallReports
import StallCapture
import StallSymbols

/// Looks at one process: validates it can be traced, then captures, unwinds and symbolizes
/// its threads. Used by `dump` and, per sample, by the monitor. Must stay on one OS thread
/// (ptrace ownership).
public final class ProcessInspector {
    public let pid: Int32
    public let capturer: ThreadCapturer
    public private(set) var modules: ProcessModules
    public let unwinder: SnapshotUnwinder
    public let symbolizer: Symbolizer
    public var classifier = ThreadStateClassifier()
    public private(set) var name: String
    public private(set) var executablePath: String?
    /// The CPython interpreter's frame reader, when the process runs one (3.11+); its
    /// `unsupportedNote` says why an interpreter found is not read. Looked for on first use:
    /// a wrapped run inspects many short processes that are never sampled.
    public var python: PythonFrameReader? {
        let (pid, modules) = (pid, modules)
        return pythonReader.get { PythonFrameReader(pid: pid, modules: modules) }
    }
    private var pythonReader = LookedForOnce<PythonFrameReader>()
    /// Names the JavaScript functions of V8 frames, when the process runs Node (its binary
    /// exports V8's postmortem metadata). Looked for on first use, as the Python reader.
    public var javascript: V8FrameReader? {
        let (pid, modules) = (pid, modules)
        return javascriptReader.get { V8FrameReader.look(pid: pid, modules: modules) }?.reader
    }
    /// Why a Node process's JavaScript functions are not named (pointer compression, a layout
    /// not known), for the dump; nil when they are, or for any other process.
    public var javascriptNote: String? { javascript == nil ? javascriptReader.found?.note : nil }
    private var javascriptReader = LookedForOnce<(reader: V8FrameReader?, note: String?)>()
    /// Whether a return address lies in one of V8's `Builtins_*`, and in the interpreter's (its
    /// trampoline and bytecode handlers): asked for every frame of every Node sample, from a few
    /// hundred addresses.
    private var v8Builtins: [UInt64: (builtin: Bool, interpreter: Bool)] = [:]
    /// Names the PHP calls of a php-fpm worker or a php CLI process (its binary exports
    /// `executor_globals`). Looked for on first use, as the Python reader.
    public var php: PHPFrameReader? {
        let (pid, modules) = (pid, modules)
        return phpReader.get { PHPFrameReader(pid: pid, modules: modules) }
    }
    private var phpReader = LookedForOnce<PHPFrameReader>()
    /// Names the Ruby calls of a ruby process's main thread (libruby exports
    /// `ruby_current_vm_ptr`). Looked for on first use, as the Python reader.
    public var ruby: RubyFrameReader? {
        let (pid, modules) = (pid, modules)
        return rubyReader.get { RubyFrameReader(pid: pid, modules: modules) }
    }
    private var rubyReader = LookedForOnce<RubyFrameReader>()
    /// False with `--no-python-frames` (and for measuring what they cost).
    public var readsPythonFrames = true
    /// Incremented when the process is found to have exec'd another program.
    public private(set) var execCount = 0
    /// Incremented when the process's name changed while its program stayed the same.
    public private(set) var renameCount = 0

    /// Validates the target: it must exist, be a user process, not a zombie, and be readable
    /// with ptrace-level access. Each refusal is a distinct, documented error.
    /// `debugDirectories`: extra places for separate debug files (`--debug-dir`).
    /// `debuginfod`: whether modules without a local debug file are fetched (`.wait` for
    /// one-shot commands, `.background` for the watch).
    /// `withExitedMainThread`: a process whose main thread exited while others run on is
    /// accepted (`dump --all-threads` reads the others); otherwise it is refused as such.
    public init(
        pid: Int32, capturer: ThreadCapturer = ThreadCapturer(), debugDirectories: [String] = [],
        debuginfod: DebuginfodUse = .off, withExitedMainThread: Bool = false
    ) throws {
        guard pid > 0 else { throw StallAgentError.invalidArgument("pid must be a positive number, got \(pid)") }
        let statusText = try ProcFS.readText("/proc/\(pid)/status", pid: pid)
        guard let status = ProcStatus.parse(statusText) else { throw StallAgentError.noSuchProcess(pid: pid) }
        // A zombie leader with live threads is a main thread that called pthread_exit (its
        // status counts the threads that run on); a zombie process has none.
        let liveThreads = status.state == "Z" ? Self.liveThreads(of: status.tgid) : []
        if status.state == "Z", !liveThreads.isEmpty, !withExitedMainThread {
            throw StallAgentError.mainThreadExited(pid: status.tgid, threads: liveThreads.count)
        }
        if (status.state == "Z" && liveThreads.isEmpty) || status.state == "X" { throw StallAgentError.zombie(pid: pid) }
        if !status.hasUserMemory && liveThreads.isEmpty { throw StallAgentError.kernelThread(pid: pid) }
        // A thread id was given: look at its process.
        let tgid = status.tgid
        // syscall needs the same access as ptrace: check now for a clear refusal (on a thread
        // that runs, when the main one has exited).
        let probe = liveThreads.first ?? tgid
        _ = try ProcFS.readText("/proc/\(tgid)/task/\(probe)/syscall", pid: tgid)
        self.pid = tgid
        self.capturer = capturer
        name = status.name
        // A zombie main thread's maps and exe read empty: a live thread's show the process's.
        let task = "/proc/\(tgid)/task/\(probe)"
        executablePath = try? ProcFS.readLink(task + "/exe", pid: tgid)
        // /proc/TID/root and map_files of a live thread, too (the main one's are gone).
        let modules = try ProcessModules(pid: probe, mapsText: try ProcFS.readText(task + "/maps", pid: tgid))
        self.modules = modules
        let path = executablePath
        lastMainMapping = modules.modules.first { $0.path == path }?.start
        unwinder = SnapshotUnwinder(modules: modules)
        symbolizer = Symbolizer(modules: modules, debugDirectories: debugDirectories, debuginfod: debuginfod)
    }

    /// The threads of `tgid` other than its main one that are not zombies themselves.
    public static func liveThreads(of tgid: Int32) -> [Int32] {
        ((try? ProcFS.threadIDs(pid: tgid)) ?? []).filter { tid in
            guard tid != tgid, let text = try? ProcFS.readText("/proc/\(tgid)/task/\(tid)/stat", pid: tgid),
                let stat = ProcThreadStat.parse(text)
            else { return false }
            return stat.state != "Z" && stat.state != "X"
        }
    }

    /// After an exec: the process's name and executable are the new program's.
    public func reidentify() {
        if let text = try? ProcFS.readText("/proc/\(pid)/status", pid: pid), let status = ProcStatus.parse(text) {
            name = status.name
        }
        executablePath = (try? ProcFS.readLink("/proc/\(pid)/exe", pid: pid)) ?? executablePath
        // The new program may (no longer) be a Python interpreter.
        pythonReader.reset()
        javascriptReader.reset()
        phpReader.reset()
        rubyReader.reset()
        v8Builtins.removeAll()
        // Its maps now, even if they were read since the exec: the executable's mapping is
        // what a later exec of the same file is told by, and a stale one would look like one.
        _ = try? refreshModules(force: true)
    }

    /// Re-reads the memory map when it changed (dlopen, exec).
    @discardableResult
    public func refreshModules(force: Bool = false) throws -> Bool {
        // Compare the maps text first: rebuilding the module list (a stat per file, the vDSO
        // read) every second would be most of an idle watch's CPU.
        let text = try ProcFS.readText("/proc/\(pid)/maps", pid: pid)
        guard force || text.hashValue != modules.mapsSignature else {
            // The same maps under another name: a rename (prctl PR_SET_NAME), or an exec whose
            // new maps were read at start while its name was still the old one (a child found
            // between its fork and its exec: the kernel sets the name after the new mm).
            if let comm = statusName(), comm != name {
                name = comm
                renameCount += 1
            }
            return false
        }
        let fresh = try ProcessModules(pid: pid, mapsText: text)
        modules = fresh
        unwinder.update(modules: fresh)
        symbolizer.update(modules: fresh)
        // After an exec (or a libpython loaded late) the interpreter may be another one.
        if pythonReader.found.map({ reader in !fresh.modules.contains { $0.path == reader.modulePath } }) ?? true {
            pythonReader.reset()
        }
        if let reader = javascriptReader.found?.reader, !fresh.modules.contains(where: { $0.path == reader.modulePath }) {
            javascriptReader.reset()
        }
        if phpReader.found.map({ reader in !fresh.modules.contains { $0.path == reader.modulePath } }) ?? true {
            phpReader.reset()
        }
        if rubyReader.found.map({ reader in !fresh.modules.contains { $0.path == reader.modulePath } }) ?? true {
            rubyReader.reset()
        }
        // Modules may have moved: addresses once in a builtin may now be anything.
        v8Builtins.removeAll()
        // An exec replaces the maps wholesale; the program may be another one (or the same
        // file with another command line, which the caller re-reads too).
        let path = try? ProcFS.readLink("/proc/\(pid)/exe", pid: pid)
        // From status, as at start: its Name escapes what the comm file gives raw (a newline
        // is the two characters \n there), and comparing the two forms saw an exec in every
        // process whose name has one (about one wrapped run in five lost its stall to it).
        let comm = statusName() ?? name
        let mainMapping = modules.modules.first { $0.path == path }?.start
        // No path: the process is exiting (its mm is gone), not exec'ing. The executable
        // where it was with another name is a rename (the maps of a Python or Node process
        // change all the time), not an exec: an exec maps the program afresh.
        // A read made mid-exec may not hold the program's mapping yet: only a move from one
        // known place to another is an exec (counting the missing mapping and then its arrival
        // made one haproxy reload two execs).
        let moved = mainMapping != nil && lastMainMapping != nil && mainMapping != lastMainMapping
        if let path, path != executablePath || moved {
            executablePath = path
            name = comm
            execCount += 1
        } else if path != nil, comm != name {
            name = comm
            renameCount += 1
        }
        lastMainMapping = mainMapping
        return true
    }

    private func statusName() -> String? {
        (try? ProcFS.readText("/proc/\(pid)/status", pid: pid)).flatMap { ProcStatus.parse($0)?.name }
    }

    /// Where the executable was mapped: a new address (ASLR) tells an exec of the same file.
    private var lastMainMapping: UInt64?

    /// The executable was built by Go (its build-info section or build-id note, which even a
    /// stripped Go binary keeps).
    public var isGoProgram: Bool {
        guard let module = modules.modules.first(where: { $0.path == executablePath }), let image = module.image else { return false }
        return image.section(named: ".go.buildinfo") != nil || image.section(named: ".note.go.buildid") != nil
    }

    public var mainModule: LoadedModule? {
        modules.modules.first { $0.path == executablePath } ?? modules.modules.first
    }

    public func threadName(_ tid: Int32) -> String? {
        (try? ProcFS.readText("/proc/\(pid)/task/\(tid)/comm", pid: pid))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public func classify(tid: Int32) -> (stat: ProcThreadStat?, syscall: ProcSyscallInfo?, result: ThreadStateClassifier.Result) {
        let stat = (try? ProcFS.readText("/proc/\(pid)/task/\(tid)/stat", pid: pid)).flatMap { ProcThreadStat.parse($0) }
        let syscall = (try? ProcFS.readText("/proc/\(pid)/task/\(tid)/syscall", pid: pid)).flatMap { ProcSyscallInfo.parse($0) }
        guard let stat else { return (nil, nil, .init(activity: .gone, detail: "exited", futexAddress: nil)) }
        let result = classifier.classify(state: stat.state, syscall: syscall, fileKind: fileKind)
        return (stat, syscall, result)
    }

    /// What an fd refers to: a path for files, "pipe:[…]"/"socket:[…]" otherwise.
    public func fileKind(_ fd: Int) -> String? {
        try? ProcFS.readLink("/proc/\(pid)/fd/\(fd)", pid: pid)
    }

    /// glibc's pthread_mutex_t keeps the owner's TID at offset 8 of the futex word. The value
    /// is trusted only if it names a live thread of this process.
    public func lockOwner(futexAddress: UInt64) -> ThreadDump.LockOwner? {
        var owner: Int32 = 0
        let n = withUnsafeMutableBytes(of: &owner) { TargetMemory.read(pid: pid, address: futexAddress + 8, into: $0) }
        guard n == 4, owner > 0, ProcFS.exists(pid: owner),
            access("/proc/\(pid)/task/\(owner)", F_OK) == 0
        else { return nil }
        return ThreadDump.LockOwner(tid: owner, name: threadName(owner))
    }

    /// The end of the mapping holding a stack pointer, to bound the stack copy.
    public func stackEnd(_ sp: UInt64) -> UInt64? {
        if let mapping = modules.mapping(containing: sp) { return mapping.end }
        // The main stack grows down past the start recorded when maps was read.
        if let stack = modules.mainStack, sp < stack.end, stack.end - sp < 1 << 30 {
            return stack.end
        }
        return nil
    }

    // MARK: perf_event sampling of a running thread

    /// Whether running threads are sampled by perf_event where the kernel allows it.
    public var perfSampling = false
    /// Twice per sample interval, so the newest sample is never older than half an interval.
    public var perfSamplePeriod = 0.025
    private var perfSamplers: [Int32: PerfStackSampler] = [:]
    private var perfRefused = false
    /// Running-thread samples taken by perf_event.
    public private(set) var perfSamples = 0
    /// ptrace captures taken twice because the stack changed while it was copied after the
    /// first one's resume (`ThreadCapturer.captureStopped`).
    public private(set) var stackChangedRetakes = 0
    /// Kernel samples of a Python thread set aside because the frame chain read beside them
    /// did not settle or did not match their native stack.
    public private(set) var pythonChainMisses = 0

    /// Turns the thread's perf sampler on while it is busy and off while it is not. The first
    /// time, opens it; a refusal (permissions, the perf mlock limit) is final for this process.
    public func setPerfSampling(tid: Int32, busy: Bool) {
        guard perfSampling, !perfRefused else { return }
        if let sampler = perfSamplers[tid] {
            sampler.setEnabled(busy)
            return
        }
        guard busy else { return }
        do {
            let sampler = try PerfStackSampler(
                tid: tid, period: perfSamplePeriod, stackBytes: capturer.options.maxStackBytes)
            sampler.setEnabled(true)
            perfSamplers[tid] = sampler
        } catch {
            perfRefused = true
        }
    }

    /// True while a running thread's kernel sample is on its way (`PerfStackSampler.awaitsSample`):
    /// the caller tries again at its next probe instead of stopping the thread. `running` and
    /// `cpuNanos` are what the caller's probe just read, so this reads nothing.
    public func awaitsPerfSample(tid: Int32, running: Bool, cpuNanos: UInt64) -> Bool {
        running && perfSamplers[tid]?.awaitsSample(cpuNanos: cpuNanos) == true
    }

    /// The newest kernel sample of a running thread, unwound, when there is a recent one whose
    /// stack copy reached the end of the unwind; nil sends the caller to the ptrace capture.
    private func perfSample(tid: Int32, probe: ThreadProbeFiles?) -> (ThreadSnapshot, UnwoundStack)? {
        // The probe's last read of the syscall file, not a new one: it was read this probe.
        guard let sampler = perfSamplers[tid], sampler.isEnabled, probe?.lastSyscall == .running,
            var snapshot = sampler.latest(pid: pid),
            MonotonicTime.nanos() &- snapshot.timeNanos < 1_000_000_000
        else { return nil }
        // A Python thread's frame chain, read now with the thread running, beside the kernel's
        // copy of its native stack (docs/architecture.md, "Script frames without a stop").
        let reader = readsPythonFrames ? python.flatMap { $0.readsFrames ? $0 : nil } : nil
        if let reader {
            reader.prepare(tid: tid)
            guard let chain = reader.readChainWithoutStop(tid: tid) else {
                pythonChainMisses += 1
                return nil
            }
            snapshot.interpreterChain = chain
        }
        let stack = unwind(snapshot)
        sampler.fit(snapshot, stack)
        // The kernel copies at most 64 KiB of stack: a deeper one is taken with a stop.
        guard stack.end != .outsideCopiedStack else { return nil }
        // The chain is some microseconds newer than the kernel's copy: kept only when both have
        // as many evaluator activations, so each Python frame lands above the evaluator frame
        // that runs it; a call through C in between sends the sample to the stop.
        if let reader, let evaluator = reader.evaluator, let python = stack.python {
            let evaluatorFrames = stack.frames.indices.filter {
                evaluator.contains(stack.frames[$0].lookupAddress(isInnermost: $0 == 0))
            }.count
            guard evaluatorFrames == python.activations.count else {
                pythonChainMisses += 1
                return nil
            }
        }
        perfSamples += 1
        return (snapshot, stack)
    }

    /// A sample of a running thread taken without stopping it (the kernel's, with its Python
    /// frames read beside it), nil when there is none: for the monitor early in a busy
    /// stretch, when a stop is not yet worth its cost (`StallMonitor.sample`).
    public func sampleWithoutStop(tid: Int32, probe: ThreadProbeFiles?) -> (snapshot: ThreadSnapshot, stack: UnwoundStack)? {
        perfSample(tid: tid, probe: probe)
    }

    /// Captures one thread. Idle threads are never stopped; a blocked thread is copied
    /// without a stop and, only if that copy lacks a register the unwind needs and its call
    /// restarts transparently after a ptrace stop (`TransparentRestart`), stopped briefly.
    /// `mayStop` false: never a stop, whatever the thread does (it throws `threadMoved` instead).
    public func captureStack(tid: Int32, activity: ThreadActivity, probe: ThreadProbeFiles? = nil, mayStop: Bool = true) throws
        -> (snapshot: ThreadSnapshot, stack: UnwoundStack)
    {
        let allowStop = mayStop && activity != .idle
        if allowStop, let sampled = perfSample(tid: tid, probe: probe) { return sampled }
        var lastError: Error = StallAgentError.threadMoved(tid: tid)
        let interpreter = interpreterChainReader(tid: tid)
        for _ in 0..<3 {
            do {
                let snapshot = try capturer.capture(
                    pid: pid, tid: tid, probe: probe, allowStop: allowStop, stackEnd: stackEnd, interpreter: interpreter)
                var stack = unwind(snapshot)
                // Re-read the maps only when a frame lies outside every known module (dlopen,
                // exec); a stack that ends early inside known code would re-read them per sample.
                if stack.end != .complete, stack.frames.contains(where: { modules.module(containing: $0.address) == nil }),
                    try refreshModules()
                {
                    stack = unwind(snapshot)
                }
                if snapshot.method == .withoutStop, stack.end == .missingRegister, allowStop,
                    activity != .stopped, TransparentRestart.allowsStop(snapshot.syscall, fileKind: fileKind)
                {
                    let stopped = try capturer.captureStopped(
                        pid: pid, tid: tid, stackEnd: stackEnd, interpreter: interpreter)
                    return (stopped, unwind(stopped))
                }
                // The copy made after the resume lost a word the unwind needs: the thread left
                // those frames meanwhile. Once more, copied while stopped.
                if snapshot.copiedAfterResume, stack.end == .stackChanged {
                    stackChangedRetakes += 1
                    var stopped = try capturer.captureStopped(
                        pid: pid, tid: tid, stackEnd: stackEnd, interpreter: interpreter, copyingAfterResume: false)
                    // What the thread lost to this sample: both stops.
                    stopped.pauseNanos += snapshot.pauseNanos
                    return (stopped, unwind(stopped))
                }
                return (snapshot, stack)
            } catch StallAgentError.threadMoved(let moved) {
                lastError = StallAgentError.threadMoved(tid: moved)
            }
        }
        throw lastError
    }

    /// The Python reader's chain copier for a capture of `tid`, nil when frames are not read.
    private func interpreterChainReader(tid: Int32) -> ((Int32) -> PythonFrameChain?)? {
        guard readsPythonFrames, let reader = python else { return nil }
        reader.prepare(tid: tid)
        return { reader.readChain(tid: $0) }
    }

    /// Unwinds a snapshot and names its Python frames (read with it) with the target running.
    public func unwind(_ snapshot: ThreadSnapshot) -> UnwoundStack {
        var stack = unwinder.unwind(snapshot)
        if let reader = javascript { nameJavaScript(&stack, snapshot: snapshot, reader: reader) }
        // PHP runs on one thread (non-thread-safe builds): its calls are the main thread's.
        if snapshot.tid == pid, let reader = php { stack.php = reader.read() }
        // Ruby's frames are read for the main thread, the one a watch follows.
        if snapshot.tid == pid, let reader = ruby { stack.ruby = reader.read() }
        if readsPythonFrames, let reader = python {
            stack.python =
                snapshot.interpreterChain.map(reader.resolve)
                ?? reader.unsupportedNote.map { PythonStack(activations: [], note: $0, version: reader.version) }
        }
        return stack
    }

    /// Names the V8 frames: code with no module (JIT code) or in one of V8's builtins (the
    /// interpreter's trampoline and handlers, which the binary embeds), whose frame pointer
    /// the unwind knew.
    private func nameJavaScript(_ stack: inout UnwoundStack, snapshot: ThreadSnapshot, reader: V8FrameReader) {
        for (index, frame) in stack.frames.enumerated() {
            guard let framePointer = frame.framePointer else { continue }
            let address = frame.lookupAddress(isInnermost: index == 0)
            var interpreted = false
            if let module = modules.module(containing: address) {
                guard module.path == reader.modulePath else { continue }
                let kind =
                    v8Builtins[address]
                    ?? {
                        let name = symbolizer.symbols(for: module)?.functionSymbol(module.moduleOffset(of: address))?.name ?? ""
                        return (name.hasPrefix("Builtins_"), name.hasPrefix("Builtins_Interpreter") || name.hasSuffix("Handler"))
                    }()
                if v8Builtins.count > 4096 { v8Builtins.removeAll() }
                v8Builtins[address] = kind
                guard kind.builtin else { continue }
                interpreted = kind.interpreter
            } else {
                guard let mapping = modules.mapping(containing: address), mapping.executable, !mapping.isFileBacked else { continue }
            }
            // Not the innermost frame: one still running keeps its bytecode offset in a register.
            if let function = reader.frame(
                framePointer: framePointer, stackWord: { snapshot.stackWord(at: $0) }, calledOut: interpreted && index > 0)
            {
                stack.javascript[index] = function
            }
        }
    }

    /// The stack of a thread blocked in `syscall`, read without a stop (nil if it moved),
    /// with its Python frames.
    public func stopFreeStack(tid: Int32, syscall: ProcSyscallInfo, probe: ThreadProbeFiles?) -> UnwoundStack? {
        capturer.captureWithoutStop(
            pid: pid, tid: tid, info: syscall, probe: probe, stackEnd: stackEnd,
            interpreter: interpreterChainReader(tid: tid)
        ).map(unwind)
    }

    /// Dumps one thread. Refusals (permission, another tracer, the process gone) are thrown;
    /// other capture failures are recorded in the dump so the other threads still show.
    public func dump(tid: Int32) throws -> ThreadDump {
        let (stat, syscall, classification) = classify(tid: tid)
        var dump = ThreadDump(
            tid: tid, name: stat?.name ?? threadName(tid) ?? "?", state: stat.map { String($0.state) } ?? "?",
            activity: classification.activity, detail: classification.detail, syscall: syscall?.syscallName,
            lockOwner: classification.futexAddress.flatMap(lockOwner), captureMethod: nil,
            pauseMicroseconds: nil, unwindEnd: nil, frames: [], error: nil, interpreterNote: nil)
        guard classification.activity != .gone else {
            dump.error = "thread exited"
            return dump
        }
        do {
            let (snapshot, stack) = try captureStack(tid: tid, activity: classification.activity)
            dump.captureMethod = snapshot.method
            dump.pauseMicroseconds = Double(snapshot.pauseNanos) / 1000
            dump.unwindEnd = stack.end
            dump.frames = symbolizer.symbolize(stack)
            dump.interpreterNote = stack.python?.note ?? stack.php?.note ?? stack.ruby?.note ?? javascriptNote
        } catch let error as StallAgentError {
            switch error {
            case .permissionDenied, .alreadyTraced: throw error
            case .targetExited where !ProcFS.exists(pid: pid): throw error
            default: dump.error = "\(error)"
            }
        } catch {
            dump.error = "\(error)"
        }
        return dump
    }

    private static func threadState(_ tid: Int32) -> Character? {
        (try? ProcFS.readText("/proc/\(tid)/stat", pid: tid)).flatMap(ProcThreadStat.parse)?.state
    }

    public func dumpProcess(allThreads: Bool) throws -> ProcessDump {
        var tids = allThreads ? try ProcFS.threadIDs(pid: pid) : [pid]
        let mainExited = allThreads && !Self.liveThreads(of: pid).isEmpty && Self.threadState(pid) == "Z"
        // A main thread that exited has no stack left: the threads that run on are the dump.
        if mainExited { tids.removeAll { $0 == pid } }
        var threads: [ThreadDump] = []
        for tid in tids {
            let dump = try self.dump(tid: tid)
            if tid == pid, dump.activity == .gone, !ProcFS.exists(pid: pid) {
                throw StallAgentError.targetExited(pid: pid)
            }
            threads.append(dump)
        }
        return ProcessDump(
            pid: pid, name: name, path: executablePath, buildId: mainModule?.image?.buildID,
            time: ReportTime.iso8601(Date()), threads: threads)
    }
}
