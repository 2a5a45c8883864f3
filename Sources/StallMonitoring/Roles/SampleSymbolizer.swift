import StallDetection
import StallReports
import StallCapture
import StallSymbols

/// Names the frames of each sample as detection keeps them, cheaply, and names a report's
/// frames again in full when it is written. Reading source lines and inlined frames at every
/// sample was a third of the agent's CPU in a wrapped `make -j2` (libc's compressed DWARF), so
/// samples carry names alone, and the frames nothing could name again later (Python, JIT) are
/// kept for the report. Apart from the monitor, what a report's frames say is tested with a
/// fake symbol source, without a process.
final class SampleSymbolizer {
    /// The symbols the namer reads: the `ProcessInspector`'s modules and symbolizer, or a fake
    /// in tests.
    protocol Target: AnyObject {
        /// The module mapping `address` (nil outside every module).
        func module(containing address: UInt64) -> LoadedModule?
        /// What the symbol tables alone name at `offset` in `module`, and the offset into it.
        func functionSymbol(in module: LoadedModule, at offset: UInt64) -> (name: String, offset: UInt64)?
        /// The stack's frames named without source lines.
        func symbolizeWithoutLines(_ stack: UnwoundStack) -> [SymbolizedFrame]
        /// One frame named in full (source lines, inlined frames).
        func symbolize(_ frame: UnwoundFrame, index: Int) -> SymbolizedFrame
        /// True when debug files fetched since the last call name frames anew.
        func refreshAfterDownloads() -> Bool
    }

    /// Which frames the culprit may name (`--app-frames`).
    let appFrames: AppFrameRule
    /// Frames a report names from what the sample kept, not from the symbols (see
    /// `keepUnresolvable`), by address.
    private(set) var frameCache: [UInt64: SymbolizedFrame] = [:]
    /// The other tracer that refused our captures, and what reports say about it.
    private var tracedBy: Int32?
    private(set) var samplingNote: String?

    init(appFrames: AppFrameRule) {
        self.appFrames = appFrames
    }

    /// A sample's frames: names from the symbol tables alone in a batch episode (see
    /// `namesOnly`), and in a loop's too: source lines and inlined frames are read for a
    /// report's frames when it is written (`resolve`).
    func frames(of stack: UnwoundStack, batch: Bool, in target: Target) -> [SampledFrame] {
        if batch {
            // Most batch samples never make a report: names from the symbol tables are
            // enough to tell frames apart, and DWARF (libc's alone is ~29 MB and a good part
            // of a short run's agent CPU) is read only when a report is written. The whole
            // episode is named this way, so its frames keep their keys once it stalls.
            return namesOnly(stack, in: target)
        }
        // Names alone here too (the same names a full lookup gives): source lines and
        // inlined frames are read for a report's frames when it is written (`resolve`).
        // Read at every sample, libc's compressed DWARF was a third of the agent's CPU
        // in a wrapped `make -j2`.
        let frames = target.symbolizeWithoutLines(stack)
        keepUnresolvable(frames)
        return frames.map(sampled)
    }

    /// A stack's frames named from the symbol tables alone (see `sample`); the same names the
    /// full symbolization gives, minus source lines and inlined frames.
    func namesOnly(_ stack: UnwoundStack, in target: Target) -> [SampledFrame] {
        var frames: [SymbolizedFrame] = stack.frames.enumerated().map { index, frame in
            let lookup = frame.lookupAddress(isInnermost: index == 0)
            guard let module = target.module(containing: lookup) else {
                return SymbolizedFrame(
                    index: index, address: frame.address, stackPointer: frame.stackPointer, module: nil, modulePath: nil,
                    buildId: nil, moduleOffset: nil, function: nil, functionOffset: nil, approximate: false)
            }
            let symbol = target.functionSymbol(in: module, at: module.moduleOffset(of: lookup))
            return SymbolizedFrame(
                index: index, address: frame.address, stackPointer: frame.stackPointer, module: module.name,
                modulePath: module.path, buildId: nil, moduleOffset: module.moduleOffset(of: frame.address),
                function: symbol?.name, functionOffset: symbol.map { $0.offset &+ (frame.address &- lookup) }, approximate: false)
        }
        // Node: V8 frames named by their JavaScript function.
        for (index, function) in stack.javascript where frames.indices.contains(index) {
            frames[index] = SymbolizedFrame(javascript: function, index: index, frame: stack.frames[index])
        }
        if !stack.javascript.isEmpty { keepUnresolvable(frames) }
        if let php = stack.php {
            frames = PHPStackSplicer.splice(frames, php)
            keepUnresolvable(frames)
        }
        if let ruby = stack.ruby {
            frames = RubyStackSplicer.splice(frames, ruby)
            keepUnresolvable(frames)
        }
        // A test runner in Python: the test's own function is a Python frame.
        if let python = stack.python {
            frames = PythonStackSplicer.splice(frames, python)
            keepUnresolvable(frames)
        }
        return frames.map(sampled)
    }

    /// Keeps, for the report, the frames of a names-only sample that `resolve` could not name
    /// again when it is written: Python frames (their file and line came with them, no table
    /// names them) and JIT frames (the perf map may have reused the address by then).
    private func keepUnresolvable(_ frames: [SymbolizedFrame]) {
        for frame in frames where frame.isScript || (frame.module == nil && frame.function != nil) {
            if frameCache.count > 50_000 { frameCache.removeAll(keepingCapacity: true) }
            frameCache[frame.address] = frame
        }
    }

    /// Frames named in full for a report written outside a stall (an on-demand capture): a
    /// report names them from here.
    func remember(_ frames: [SymbolizedFrame]) {
        for frame in frames { frameCache[frame.address] = frame }
    }

    func sampled(_ frame: SymbolizedFrame) -> SampledFrame {
        Self.sampledFrame(frame, appFrames: appFrames)
    }

    /// What detection keeps of a frame; an unnamed frame is "module+0xOFFSET".
    static func sampledFrame(_ frame: SymbolizedFrame, appFrames: AppFrameRule) -> SampledFrame {
        let isApp = appFrames.isApp(frame)
        if frame.isScript {
            return SampledFrame(
                function: frame.function ?? "?", module: frame.module ?? SymbolizedFrame.pythonModule,
                address: frame.address, cfa: frame.stackPointer, language: frame.language, isApp: isApp, site: frame.line)
        }
        // A nearest-symbol guess keeps its mark in call trees, folded stacks and summaries.
        return SampledFrame(
            function: frame.function.map { frame.approximate ? $0 + " (approximate)" : $0 }
                ?? "\(frame.module ?? "?")+0x\(String(frame.moduleOffset ?? frame.address, radix: 16))",
            module: frame.module ?? "?", address: frame.address, cfa: frame.stackPointer, isApp: isApp,
            site: frame.function == nil ? nil : frame.functionOffset.map { Int(clamping: $0) })
    }

    /// A sample's frame named for a report: what the sample kept, or the symbols in full.
    func resolve(_ frame: SampledFrame, index: Int, in target: Target) -> SymbolizedFrame {
        if target.refreshAfterDownloads() { frameCache = [:] }
        // A Python frame's address is a bytecode instruction's: never a native symbol's.
        var cached = frameCache[frame.address]
        if let known = cached, known.isScript != frame.isInterpreted { cached = nil }
        if cached == nil, frame.isInterpreted {
            cached = SymbolizedFrame(
                index: index, address: frame.address, stackPointer: frame.cfa, module: frame.module, modulePath: nil,
                buildId: nil, moduleOffset: nil, function: frame.function, functionOffset: nil, approximate: false,
                language: frame.language)
        }
        var symbolized =
            cached
            ?? target.symbolize(
                UnwoundFrame(address: frame.address, stackPointer: frame.cfa, isSignalFrame: false), index: index)
        symbolized.index = index
        symbolized.stackPointer = frame.cfa
        symbolized.inApp = frame.isApp
        return symbolized
    }

    /// A capture refused by another tracer (strace, gdb, another agent): true the first time
    /// for this tracer, which reports then name (`name` is read only then).
    func noteTracer(_ tracer: Int32, name: () -> String) -> Bool {
        guard tracedBy != tracer else { return false }
        tracedBy = tracer
        samplingNote = "cannot sample: traced by PID \(tracer) (\(name()))"
        return true
    }

    /// A new program (an exec): the old one's frames name nothing.
    func reset() {
        frameCache.removeAll()
    }
}

extension ProcessInspector: SampleSymbolizer.Target {
    func module(containing address: UInt64) -> LoadedModule? {
        modules.module(containing: address)
    }

    func functionSymbol(in module: LoadedModule, at offset: UInt64) -> (name: String, offset: UInt64)? {
        symbolizer.symbols(for: module)?.functionSymbol(offset)
    }

    func symbolizeWithoutLines(_ stack: UnwoundStack) -> [SymbolizedFrame] {
        symbolizer.symbolize(stack, sourceLines: false)
    }

    func symbolize(_ frame: UnwoundFrame, index: Int) -> SymbolizedFrame {
        symbolizer.symbolize(frame, index: index)
    }

    func refreshAfterDownloads() -> Bool {
        symbolizer.refreshAfterDownloads()
    }
}
