import Foundation
import StallSymbols

/// Reads a CPython 3.11+ process's interpreter frames from outside, the way py-spy does: find
/// `_PyRuntime` in the symbol table of the python binary or libpython, the thread state of a
/// thread by its native id, then walk `_PyInterpreterFrame.previous` and read each code object.
///
/// Everything read is bounded (depth, string and table sizes) and checked (code and string
/// objects by their type pointer, the chain for loops), so a corrupt or changing interpreter
/// gives fewer frames and a note, never a hang or a wrong name from garbage.
public final class PythonFrameReader {
    public static let maxDepth = 256
    static let maxStringLength = 1024
    static let maxLineTableBytes = 64 * 1024

    public let version: String
    /// Set when the interpreter was found but cannot be read (unknown version, free-threaded):
    /// reports show native frames only, with this note.
    public let unsupportedNote: String?
    /// The module holding `_PyRuntime` (libpython or the python binary).
    public let modulePath: String
    /// Where `_PyEval_EvalFrameDefault`'s code is in the process: a native stack has one such
    /// frame per activation of the chain (`PythonStackSplicer`).
    public let evaluator: Range<UInt64>?
    /// Whether this interpreter's frames are read at all (`unsupportedNote` says why not).
    public var readsFrames: Bool { layout != nil }
    private let layout: PythonLayout?
    private let memory: TargetReader
    private let runtime: UInt64
    private let codeType: UInt64?
    private let unicodeType: UInt64?
    private let bytesType: UInt64?
    private var threadStates: [Int32: UInt64] = [:]

    private struct CodeInfo {
        var header: [UInt64]
        var frame: (name: String, qualifiedName: String, file: String, firstLine: Int)
        var table: [UInt8]
    }
    private var codeCache: [UInt64: CodeInfo] = [:]

    /// The reader for `modules`' interpreter, or nil when no module defines `_PyRuntime`
    /// (not a CPython process, or an interpreter linked without its symbols exported).
    public init?(pid: Int32, modules: ProcessModules) {
        memory = TargetReader(pid: pid)
        var found: (module: LoadedModule, runtime: UInt64)?
        for module in modules.modules where module.name.hasPrefix("python") || module.name.hasPrefix("libpython") {
            guard let image = module.image, let address = image.address(ofSymbol: "_PyRuntime") else { continue }
            found = (module, module.bias &+ address)
            break
        }
        guard let (module, runtime) = found, let image = module.image else { return nil }
        self.runtime = runtime
        modulePath = module.path
        func symbol(_ name: String) -> UInt64? { image.address(ofSymbol: name).map { module.bias &+ $0 } }
        evaluator = image.range(ofSymbol: "_PyEval_EvalFrameDefault").map {
            (module.bias &+ $0.lowerBound)..<(module.bias &+ $0.upperBound)
        }
        codeType = symbol("PyCode_Type")
        unicodeType = symbol("PyUnicode_Type")
        bytesType = symbol("PyBytes_Type")

        var chosen: PythonLayout?
        var note: String?
        var versionText = "?"
        let debugOffsets = memory.bytes(runtime, 584)
        if let debugOffsets, Array(debugOffsets[0..<8]) == Array("xdebugpy".utf8) {
            let parsed = PythonLayout.fromDebugOffsets(debugOffsets)
            if let (major, minor) = parsed.version { versionText = "\(major).\(minor)" }
            chosen = parsed.layout
            if chosen == nil {
                note =
                    parsed.freeThreaded
                    ? "Python \(versionText) is a free-threaded build; its frames are not read (native frames only)"
                    : "Python \(versionText): this _Py_DebugOffsets layout is not known to stallagent (native frames only)"
            }
        } else if let address = symbol("Py_Version"), let bytes = memory.bytes(address, 4) {
            // PY_VERSION_HEX: 0xMMmmPPrs.
            let major = Int(bytes[3])
            let minor = Int(bytes[2])
            versionText = "\(major).\(minor)"
            chosen = PythonLayout.builtIn(major: major, minor: minor)
            if chosen == nil {
                note = "Python \(versionText) is not supported for Python frames (3.11, 3.12 and 3.13 are); native frames only"
            }
        } else {
            note = "Python older than 3.11 (no Py_Version): Python frames are not read; native frames only"
        }
        version = versionText
        layout = chosen
        unsupportedNote = note
    }

    /// A reader over structures at known addresses, with no type checks: for tests that lay
    /// out broken interpreter state in memory.
    init(pid: Int32, layout: PythonLayout, runtime: UInt64) {
        memory = TargetReader(pid: pid)
        self.layout = layout
        self.runtime = runtime
        version = layout.version
        unsupportedNote = nil
        modulePath = ""
        evaluator = nil
        codeType = nil
        unicodeType = nil
        bytesType = nil
    }

    // MARK: Capture time (the thread may be stopped: pointers only)

    /// Finds `tid`'s thread state ahead of a capture, so the walk of the thread list does not
    /// happen while the thread is stopped.
    public func prepare(tid: Int32) {
        guard layout != nil, threadStates[tid] == nil else { return }
        threadStates[tid] = findThreadState(tid: tid)
    }

    /// Copies `tid`'s frame chain. Runs inside the capture window, so it reads only the thread
    /// state and one small block per frame.
    public func readChain(tid: Int32) -> PythonFrameChain? {
        guard let layout else { return nil }
        var first: UInt64?
        for attempt in 0..<2 {
            guard let state = threadStates[tid] ?? findThreadState(tid: tid) else {
                // A thread that never ran Python (a C library's worker) has no state: no note.
                return tid == memory.pid ? PythonFrameChain(frames: [], note: "no Python thread state for the main thread") : nil
            }
            let size = Int(max(layout.threadNativeID, layout.threadFrame) + 8)
            guard let block = memory.bytes(state, size),
                TargetReader.word(block, layout.threadNativeID) == UInt64(tid) || threadStates[tid] == nil
            else {
                // The thread state moved (thread restarted, interpreter re-initialised): look again once.
                threadStates[tid] = nil
                if attempt == 0 { continue }
                return PythonFrameChain(frames: [], note: "Python thread state for thread \(tid) not readable")
            }
            threadStates[tid] = state
            let pointer = TargetReader.word(block, layout.threadFrame)
            if let inner = layout.cframeCurrentFrame {
                first = pointer == 0 ? 0 : memory.word(pointer &+ inner)
            } else {
                first = pointer
            }
            break
        }
        guard let first else { return PythonFrameChain(frames: [], note: "Python frame pointer not readable") }
        var frames: [PythonFrameChain.Raw] = []
        var seen = Set<UInt64>()
        var address = first
        var note: String?
        let readSize = layout.frameReadSize
        // Frames live next to each other in the thread's data stack: one page read serves
        // several, which keeps the copy (done while the thread is stopped) short.
        var page: (base: UInt64, bytes: [UInt8])?
        func frameBlock(_ address: UInt64) -> [UInt8]? {
            let base = address & ~4095
            let offset = Int(address - base)
            guard offset + readSize <= 4096 else { return memory.bytes(address, readSize) }
            if page?.base != base {
                guard let bytes = memory.bytes(base, 4096) else { return nil }
                page = (base, bytes)
            }
            return Array(page!.bytes[offset..<(offset + readSize)])
        }
        while address != 0 {
            guard frames.count < PythonFrameReader.maxDepth else {
                note = "Python stack deeper than \(PythonFrameReader.maxDepth) frames: truncated"
                break
            }
            guard address & 7 == 0, seen.insert(address).inserted else {
                note = "Python frame chain loops or is misaligned at 0x\(String(address, radix: 16)): truncated"
                break
            }
            guard let block = frameBlock(address) else {
                note = "Python frame chain points outside memory (0x\(String(address, radix: 16))): truncated"
                break
            }
            frames.append(
                PythonFrameChain.Raw(
                    address: address, code: TargetReader.word(block, layout.frameCode),
                    instruction: TargetReader.word(block, layout.frameInstruction),
                    owner: block[Int(layout.frameOwner)],
                    isEntry: layout.frameIsEntry.map { block[Int($0)] != 0 } ?? false,
                    firstLocal: TargetReader.word(block, layout.frameFirstLocal)))
            address = TargetReader.word(block, layout.framePrevious)
        }
        return PythonFrameChain(frames: frames, note: note)
    }

    /// Copies `tid`'s chain while the thread runs (docs/architecture.md, "Script frames without
    /// a stop"): read until two reads in a row agree on every frame's address, code object and
    /// kind, at most four reads; nil when they never agree (the thread was calling and returning
    /// faster than a read). Instruction pointers and first locals are the last read's (a loop
    /// changes them at every step): a line can be a few microseconds newer than the frames
    /// around it, never another function's.
    public func readChainWithoutStop(tid: Int32) -> PythonFrameChain? {
        guard var previous = readChain(tid: tid) else { return nil }
        for _ in 0..<3 {
            guard let next = readChain(tid: tid) else { return nil }
            if next.note == previous.note, next.frames.count == previous.frames.count,
                zip(next.frames, previous.frames).allSatisfy({
                    $0.address == $1.address && $0.code == $1.code && $0.owner == $1.owner && $0.isEntry == $1.isEntry
                })
            {
                return next
            }
            previous = next
        }
        return nil
    }

    /// The thread state whose native thread id is `tid`; for the main thread, when no state
    /// records its id, the oldest one (the list's last: new states are pushed at the head).
    private func findThreadState(tid: Int32) -> UInt64? {
        guard let layout, let interpreter = memory.word(runtime &+ layout.runtimeInterpretersHead), interpreter != 0,
            var state = memory.word(interpreter &+ layout.interpreterThreadsHead)
        else { return nil }
        var seen = Set<UInt64>()
        var last: UInt64?
        while state != 0, seen.count < 4096, seen.insert(state).inserted {
            guard let id = memory.word(state &+ layout.threadNativeID) else { break }
            if id == UInt64(tid) { return state }
            last = state
            guard let next = memory.word(state &+ layout.threadNext) else { break }
            state = next
        }
        return tid == memory.pid ? last : nil
    }

    // MARK: After the capture (the thread runs again)

    /// Names the chain's frames and groups them by interpreter activation.
    public func resolve(_ chain: PythonFrameChain) -> PythonStack {
        var activations: [[PythonFrame]] = [[]]
        var note = chain.note
        guard let layout else { return PythonStack(activations: [], note: unsupportedNote, version: version) }
        func isShim(_ raw: PythonFrameChain.Raw) -> Bool {
            layout.frameIsEntry == nil && raw.owner == PythonLayout.ownedByCStack
        }
        for (index, raw) in chain.frames.enumerated() {
            if isShim(raw) {
                // The entry shim of a `_PyEval_EvalFrameDefault` activation: the frames after it
                // belong to the next (outer) activation.
                activations.append([])
                continue
            }
            guard let code = codeInfo(raw.code, layout: layout) else {
                note = note ?? "a Python frame's code object at 0x\(String(raw.code, radix: 16)) was unreadable; frame left out"
                if raw.isEntry { activations.append([]) }
                continue
            }
            let start = raw.code &+ layout.codeAdaptive
            let unit = raw.instruction >= start ? Int(clamping: (raw.instruction - start) / 2) : -1
            let line = PythonLineTable.line(for: unit, table: code.table, firstLine: code.frame.firstLine)
            // The caller is the next frame outwards that is a Python function (an entry shim
            // lives on the C stack and has no locals of its own).
            let caller = chain.frames[(index + 1)...].first { !isShim($0) }
            activations[activations.count - 1].append(
                PythonFrame(
                    name: code.frame.name, qualifiedName: code.frame.qualifiedName, file: code.frame.file, line: line,
                    firstLine: code.frame.firstLine, instruction: raw.instruction, frameAddress: raw.address,
                    callerSlot: caller?.firstLocal ?? 0))
            if raw.isEntry { activations.append([]) }
        }
        while activations.last?.isEmpty == true { activations.removeLast() }
        return PythonStack(activations: activations, note: note, version: version)
    }

    /// A code object's names, file and line table. Its header is re-read every time (a freed
    /// code object's address can be reused); the strings only when the header changed.
    private func codeInfo(_ address: UInt64, layout: PythonLayout) -> CodeInfo? {
        let fields = [layout.codeFilename, layout.codeName, layout.codeQualname, layout.codeLinetable, layout.codeFirstLineNumber]
        let size = Int(fields.max()! + 8)
        guard address & 7 == 0, let block = memory.bytes(address, size) else { return nil }
        if let codeType, TargetReader.word(block, layout.objects.objectType) != codeType { return nil }
        let header = fields.map { TargetReader.word(block, $0) } + [TargetReader.word(block, layout.objects.objectType)]
        if let cached = codeCache[address], cached.header == header { return cached }
        guard let name = string(TargetReader.word(block, layout.codeName), layout: layout),
            let file = string(TargetReader.word(block, layout.codeFilename), layout: layout)
        else { return nil }
        let qualifiedName = string(TargetReader.word(block, layout.codeQualname), layout: layout) ?? name
        let firstLine = Int(TargetReader.int32(block, layout.codeFirstLineNumber))
        let table = bytes(TargetReader.word(block, layout.codeLinetable), layout: layout) ?? []
        let info = CodeInfo(header: header, frame: (name, qualifiedName, file, firstLine), table: table)
        if codeCache.count > 20_000 { codeCache.removeAll(keepingCapacity: true) }
        codeCache[address] = info
        return info
    }

    /// A compact str object's text (what code objects hold), cut at `maxStringLength`
    /// characters; nil when the object is not a str or its header is implausible.
    func string(_ address: UInt64, layout: PythonLayout) -> String? {
        guard address != 0, address & 7 == 0, let header = memory.bytes(address, Int(layout.objects.compactObjectSize)) else { return nil }
        if let unicodeType, TargetReader.word(header, layout.objects.objectType) != unicodeType { return nil }
        let state = UInt32(truncatingIfNeeded: TargetReader.word(header, layout.objects.unicodeState))
        let kind = Int((state >> 2) & 7)
        let compact = (state >> 5) & 1 == 1
        let ascii = (state >> 6) & 1 == 1
        let length = Int64(bitPattern: TargetReader.word(header, layout.objects.unicodeLength))
        guard compact, [1, 2, 4].contains(kind), length >= 0, length < 1 << 30 else { return nil }
        let count = Int(min(length, Int64(PythonFrameReader.maxStringLength)))
        if count == 0 { return "" }
        let data = address &+ (ascii ? layout.objects.asciiObjectSize : layout.objects.compactObjectSize)
        guard let raw = memory.bytes(data, count * kind) else { return nil }
        var scalars = String.UnicodeScalarView()
        for index in 0..<count {
            var value: UInt32 = 0
            for byte in 0..<kind { value |= UInt32(raw[index * kind + byte]) << (8 * UInt32(byte)) }
            scalars.append(Unicode.Scalar(value) ?? "\u{FFFD}")
        }
        var text = String(scalars)
        if length > Int64(count) { text += "…" }
        return text
    }

    /// A bytes object's contents (the line table), nil past `maxLineTableBytes`: a truncated
    /// or corrupt table gives the function's first line, not a wrong one.
    private func bytes(_ address: UInt64, layout: PythonLayout) -> [UInt8]? {
        guard address != 0, address & 7 == 0, let header = memory.bytes(address, Int(layout.objects.bytesData)) else { return nil }
        if let bytesType, TargetReader.word(header, layout.objects.objectType) != bytesType { return nil }
        let size = Int64(bitPattern: TargetReader.word(header, layout.objects.bytesSize))
        guard size >= 0, size <= Int64(PythonFrameReader.maxLineTableBytes) else { return nil }
        if size == 0 { return [] }
        return memory.bytes(address &+ layout.objects.bytesData, Int(size))
    }
}
