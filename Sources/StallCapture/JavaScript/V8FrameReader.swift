import Foundation
import StallSymbols

/// A JavaScript function found in a V8 frame: what the report shows instead of an unnamed
/// JIT address or the interpreter's trampoline.
public struct JavaScriptFrame: Sendable, Equatable {
    /// "blockExec"; "<anonymous>" for a function without a name.
    public var name: String
    /// The script: a path, a `file://` URL, or `node:internal/…` for Node's own code.
    public var script: String?
    /// 1-based: the line executing in the frame where V8 saved where it is (an interpreted
    /// frame that called another function), else the line the function is defined on.
    public var line: Int?
    /// Its SharedFunctionInfo's address: one per function, where an interpreted frame's
    /// return address (the interpreter's trampoline) is the same for every function.
    public var shared: UInt64 = 0
}

/// Names the JavaScript functions of a V8 process's frames from outside, with no flag on the
/// node command line: a JS frame keeps its JSFunction at a fixed slot below its frame pointer
/// (`v8dbg_off_fp_function`); from it, the SharedFunctionInfo gives the name (a string, or the
/// ScopeInfo's function name) and the Script its name and line ends.
///
/// Read with the target running, right after the capture: the function pointers come from the
/// stack copy, the objects from the heap. A garbage collection in between can move an object;
/// every object is then checked by its map's instance type, so a moved one gives no name (only
/// another function's shared info landing at the same address meanwhile could give a wrong
/// one). Results are cached per SharedFunctionInfo and per JSFunction, validated again on each use.
public final class V8FrameReader {
    static let maxStringLength = 4096
    static let maxSourceLength = 64 << 20
    /// ScopeInfo stores context local names inline below this count, a hash table above.
    static let maxInlinedLocalNames = 75

    public let modulePath: String
    private let layout: V8Layout
    private let memory: TargetReader
    /// By SharedFunctionInfo: the frame, and its Script (where an executing line is looked up).
    private var functions: [UInt64: (frame: JavaScriptFrame, script: UInt64?)] = [:]
    private var positionTables: [UInt64: (length: Int, entries: [(code: Int, position: Int)])] = [:]
    static let maxPositionTableBytes = 4 << 20
    /// By JSFunction: a frame's function named with one read instead of five (`frame`).
    private var closures: [UInt64: (shared: UInt64, frame: JavaScriptFrame)] = [:]
    private var lineEnds: [UInt64: [Int]] = [:]

    /// The reader for a process whose executable or a library (`libnode.so`) exports V8's
    /// postmortem metadata in a layout it reads, or why a Node binary there is not read (a note
    /// for the user: its frames stay as they were); both nil for a process that runs no Node.
    public static func look(pid: Int32, modules: ProcessModules) -> (reader: V8FrameReader?, note: String?) {
        var note: String?
        for module in modules.modules where module.name.hasPrefix("node") || module.name.hasPrefix("libnode") {
            guard let image = module.image else { continue }
            var refusal: String?
            if let layout = V8Layout(image: image, refusal: &refusal) {
                return (V8FrameReader(pid: pid, modulePath: module.path, layout: layout), nil)
            }
            note = note ?? refusal
        }
        return (nil, note)
    }

    private init(pid: Int32, modulePath path: String, layout: V8Layout) {
        modulePath = path
        self.layout = layout
        memory = TargetReader(pid: pid)
    }

    /// The JS function of the frame whose frame pointer is `framePointer`, reading the frame's
    /// slots through `stackWord` (the capture's stack copy); nil for a frame that is not a JS
    /// function's (an exit, entry or stub frame keeps a frame-type marker, a Smi, where a JS
    /// frame keeps its context).
    ///
    /// `calledOut`: the frame is interpreted and was calling another function (its return
    /// address is in one of V8's interpreter builtins, and it is not the innermost frame), so
    /// the interpreter saved the offset of the bytecode it is at in the frame: its line is then
    /// the executing one, as Node's own stack traces give it, not the definition's.
    public func frame(framePointer: UInt64, stackWord: (UInt64) -> UInt64?, calledOut: Bool = false) -> JavaScriptFrame? {
        guard var named = function(framePointer: framePointer, stackWord: stackWord) else { return nil }
        if calledOut, let line = executingLine(framePointer: framePointer, stackWord: stackWord, shared: named.shared) {
            named.line = line
        }
        return named
    }

    private func function(framePointer: UInt64, stackWord: (UInt64) -> UInt64?) -> JavaScriptFrame? {
        guard framePointer > 16,
            let context = stackWord(framePointer &+ UInt64(bitPattern: Int64(layout.frameContext))), isHeapObject(context),
            let function = stackWord(framePointer &+ UInt64(bitPattern: Int64(layout.frameFunction)))
        else { return nil }
        // One read for a function seen before: its shared-info field still holding the shared
        // info it held then means the same function (or another closure of it: same name), as
        // only an object that is the function itself keeps that pointer at that offset.
        if let (shared, frame) = closures[function], field(function, layout.functionShared) == shared { return frame }
        guard let functionType = instanceType(function), layout.functionTypes.contains(functionType),
            let shared = field(function, layout.functionShared), isHeapObject(shared)
        else { return nil }
        let named: (frame: JavaScriptFrame, script: UInt64?)
        if let known = functions[shared], validShared(shared) {
            named = known
        } else {
            guard let described = describe(shared: shared) else { return nil }
            named = described
        }
        if functions.count > 50_000 { functions.removeAll(keepingCapacity: true) }
        if closures.count > 50_000 { closures.removeAll(keepingCapacity: true) }
        functions[shared] = named
        closures[function] = (shared, named.frame)
        return named.frame
    }

    // MARK: Objects

    private func isHeapObject(_ value: UInt64) -> Bool { value & 3 == 1 }

    private func smi(_ value: UInt64?) -> Int? {
        guard let value, value & 1 == 0 else { return nil }
        return Int(Int64(bitPattern: value) >> 32)
    }

    private func field(_ object: UInt64, _ offset: Int) -> UInt64? {
        memory.word(object &- 1 &+ UInt64(bitPattern: Int64(offset)))
    }

    private func instanceType(_ object: UInt64) -> Int? {
        guard isHeapObject(object), let map = field(object, layout.heapObjectMap), isHeapObject(map),
            let bytes = memory.bytes(map &- 1 &+ UInt64(layout.mapInstanceType), 2)
        else { return nil }
        return Int(bytes[0]) | Int(bytes[1]) << 8
    }

    /// Still a SharedFunctionInfo (a garbage collection may have moved it since).
    private func validShared(_ shared: UInt64) -> Bool { instanceType(shared) == layout.sharedType }

    private func describe(shared: UInt64) -> (frame: JavaScriptFrame, script: UInt64?)? {
        guard validShared(shared), let nameOrScope = field(shared, layout.sharedNameOrScopeInfo) else { return nil }
        var name: String?
        var start: Int?
        if let type = instanceType(nameOrScope) {
            if type == layout.scopeInfoType {
                (name, start) = scopeInfo(nameOrScope)
            } else if type < layout.strings.firstNonStringType {
                name = string(nameOrScope, limit: Self.maxStringLength)
            }
        }
        // A function not compiled yet keeps its inferred name and position in UncompiledData.
        if name?.isEmpty ?? true || start == nil, let offset = layout.sharedFunctionData, let types = layout.uncompiledDataTypes,
            let data = field(shared, offset), let type = instanceType(data), types.contains(type)
        {
            if name?.isEmpty ?? true, let inferred = field(data, layout.uncompiledInferredName) {
                name = string(inferred, limit: Self.maxStringLength)
            }
            if start == nil, let bytes = memory.bytes(data &- 1 &+ UInt64(layout.uncompiledStartPosition), 4) {
                start = Int(Int32(bitPattern: UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24))
            }
        }
        var frame = JavaScriptFrame(name: (name?.isEmpty ?? true) ? "<anonymous>" : name!, script: nil, line: nil, shared: shared)
        guard let script = field(shared, layout.sharedScript), instanceType(script) == layout.script.scriptType else { return (frame, nil) }
        frame.script = field(script, layout.script.scriptName).flatMap { string($0, limit: Self.maxStringLength) }
        if let start, start >= 0 { frame.line = line(of: start, in: script) }
        return (frame, script)
    }

    /// The function name and start position a ScopeInfo holds. Its variable part (after the
    /// flags and counts) is laid out by the flags, per V8 version: context local names (inline
    /// below 75, else one hash table) and infos, a saved class variable, the function variable
    /// (its name first), the inferred name, and (V8 11) the position.
    private func scopeInfo(_ scope: UInt64) -> (name: String?, start: Int?) {
        let base = scope &- 1 &+ 8
        func slot(_ index: Int) -> UInt64? { memory.word(base &+ UInt64(8 * index)) }
        let flags: Int
        if layout.scopeInfoFixedPosition {
            guard let raw = slot(0) else { return (nil, nil) }
            flags = Int(raw & 0xffff_ffff)
        } else {
            guard let value = smi(slot(0)) else { return (nil, nil) }
            flags = value
        }
        guard let locals = smi(slot(layout.scopeInfoContextLocals)), (0..<100_000).contains(locals) else { return (nil, nil) }
        let scopeType = flags & 0xf
        // V8 11: CLASS 0, EVAL 1, FUNCTION 2, MODULE 3, SCRIPT 4; V8 12.8+: SCRIPT 0, REPL 1,
        // CLASS 2, EVAL 3, FUNCTION 4, MODULE 5.
        let isModule = layout.scopeInfoFixedPosition ? scopeType == 5 : scopeType == 3
        var index = layout.scopeInfoFirstVariables + (isModule ? 1 : 0)
        index += locals < Self.maxInlinedLocalNames ? locals : 1
        index += locals
        if flags >> 10 & 1 == 1 { index += 1 }
        var name: String?
        if flags >> 12 & 3 != 0 {
            name = slot(index).flatMap { string($0, limit: Self.maxStringLength) }
            index += 2
        }
        if flags >> 14 & 1 == 1 {
            if name?.isEmpty ?? true { name = slot(index).flatMap { string($0, limit: Self.maxStringLength) } }
            index += 1
        }
        let start: Int?
        if layout.scopeInfoFixedPosition {
            start = smi(slot(3))
        } else {
            start = (1...4).contains(scopeType) ? smi(slot(index)) : nil
        }
        return (name, start)
    }

    // MARK: Lines

    /// The line of the bytecode an interpreted frame is at: its offset (saved in the frame)
    /// looked up in the BytecodeArray's source position table, as V8's
    /// `AbstractCode::SourcePosition` does. nil when any object fails its type check.
    private func executingLine(framePointer: UInt64, stackWord: (UInt64) -> UInt64?, shared: UInt64) -> Int? {
        guard let recipe = layout.executingLine, let script = functions[shared]?.script,
            let array = stackWord(framePointer &+ UInt64(bitPattern: Int64(recipe.frameBytecodeArray))),
            instanceType(array) == recipe.bytecodeArrayType,
            let tagged = smi(stackWord(framePointer &+ UInt64(bitPattern: Int64(recipe.frameBytecodeOffset)))),
            case let offset = tagged - (recipe.bytecodeArrayData - 1), offset >= 0,
            let table = field(array, recipe.sourcePositionTable), let type = instanceType(table), recipe.tableTypes.contains(type),
            let entries = positionTable(table, recipe: recipe)
        else { return nil }
        // The last entry at or before the offset; its position packs the script offset + 1
        // above an "external" bit (V8's SourcePosition).
        var position: Int?
        for entry in entries {
            if entry.code > offset { break }
            position = entry.position
        }
        guard let packed = position, case let scriptOffset = ((packed >> 1) & ((1 << 30) - 1)) - 1, scriptOffset >= 0 else { return nil }
        return line(of: scriptOffset, in: script)
    }

    /// A source position table, decoded: pairs of zig-zag VLQ deltas, the code offset's sign
    /// carrying the statement flag (V8's `SourcePositionTableIterator`). Cached by address with
    /// its length: the array does not change once made.
    private func positionTable(_ table: UInt64, recipe: V8Layout.ExecutingLine) -> [(code: Int, position: Int)]? {
        guard let length = smi(field(table, recipe.byteArrayLength)), (0...Self.maxPositionTableBytes).contains(length) else { return nil }
        if let known = positionTables[table], known.length == length { return known.entries }
        guard let bytes = memory.bytes(table &- 1 &+ UInt64(recipe.byteArrayData), length) else { return nil }
        var index = 0
        func next() -> Int? {
            var value = 0
            var shift = 0
            while index < bytes.count, shift < 64 {
                let byte = bytes[index]
                index += 1
                value |= Int(byte & 0x7f) << shift
                shift += 7
                if byte & 0x80 == 0 { return (value >> 1) ^ -(value & 1) }
            }
            return nil
        }
        var entries: [(code: Int, position: Int)] = []
        var code = -1
        var position = 0
        while let codeDelta = next(), let positionDelta = next() {
            code += codeDelta >= 0 ? codeDelta : -codeDelta - 1
            position += positionDelta
            entries.append((code, position))
        }
        if positionTables.count > 4096 { positionTables.removeAll(keepingCapacity: true) }
        positionTables[table] = (length, entries)
        return entries
    }

    /// The 1-based line holding source `position`, from the script's line ends, or from its
    /// source when V8 has not computed them (it does so only when something asks for a line).
    private func line(of position: Int, in script: UInt64) -> Int? {
        let ends: [Int]
        if let known = lineEnds[script] {
            ends = known
        } else {
            guard let computed = computeLineEnds(script) else { return nil }
            if lineEnds.count > 256 { lineEnds.removeAll(keepingCapacity: true) }
            lineEnds[script] = computed
            ends = computed
        }
        var low = 0
        var high = ends.count
        while low < high {
            let middle = (low + high) / 2
            if ends[middle] < position { low = middle + 1 } else { high = middle }
        }
        return low < ends.count ? low + 1 : nil
    }

    private func computeLineEnds(_ script: UInt64) -> [Int]? {
        if let array = field(script, layout.script.scriptLineEnds), instanceType(array) == layout.script.fixedArrayType,
            let count = smi(field(array, layout.script.fixedArrayLength)), (1...10_000_000).contains(count),
            let bytes = memory.bytes(array &- 1 &+ UInt64(layout.script.fixedArrayData), 8 * count)
        {
            return (0..<count).compactMap { smi(TargetReader.word(bytes, $0 * 8)) }
        }
        guard let source = field(script, layout.script.scriptSource).flatMap({ string($0, limit: Self.maxSourceLength) }) else {
            return nil
        }
        // V8's own rule: a line ends at \n, at \r not followed by \n, and at U+2028 and U+2029.
        var ends: [Int] = []
        let units = Array(source.utf16)
        for (index, unit) in units.enumerated() {
            if unit == 0x0A || unit == 0x2028 || unit == 0x2029 || (unit == 0x0D && (index + 1 == units.count || units[index + 1] != 0x0A)) {
                ends.append(index)
            }
        }
        ends.append(units.count)
        return ends
    }

    // MARK: Strings

    /// A V8 string's text, through cons, thin and sliced strings; nil for what cannot be read
    /// (an external string whose data is not cached in the object, a string too long).
    private func string(_ object: UInt64, limit: Int, depth: Int = 0) -> String? {
        guard depth < 32, let type = instanceType(object), type < layout.strings.firstNonStringType,
            let lengthBytes = memory.bytes(object &- 1 &+ UInt64(layout.strings.stringLength), 4)
        else { return nil }
        let length = Int(UInt32(lengthBytes[0]) | UInt32(lengthBytes[1]) << 8 | UInt32(lengthBytes[2]) << 16 | UInt32(lengthBytes[3]) << 24)
        guard length <= limit else { return nil }
        if length == 0 { return "" }
        let oneByte = type & layout.strings.encodingMask == layout.strings.oneByteTag
        func decode(_ address: UInt64) -> String? {
            guard let bytes = memory.bytes(address, oneByte ? length : 2 * length) else { return nil }
            if oneByte { return String(decoding: bytes.map { UInt16($0) }, as: UTF16.self) }
            let units = stride(from: 0, to: bytes.count, by: 2).map { UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8 }
            return String(decoding: units, as: UTF16.self)
        }
        switch type & layout.strings.representationMask {
        case layout.strings.seqTag:
            return decode(object &- 1 &+ UInt64(oneByte ? layout.strings.seqOneByteChars : layout.strings.seqTwoByteChars))
        case layout.strings.consTag:
            guard let first = field(object, layout.strings.consFirst).flatMap({ string($0, limit: limit, depth: depth + 1) }),
                let second = field(object, layout.strings.consSecond).flatMap({ string($0, limit: limit, depth: depth + 1) })
            else { return nil }
            return first + second
        case layout.strings.thinTag:
            return field(object, layout.strings.thinActual).flatMap { string($0, limit: limit, depth: depth + 1) }
        case layout.strings.slicedTag:
            guard let offset = smi(field(object, layout.strings.slicedOffset)), offset >= 0,
                let parent = field(object, layout.strings.slicedParent).flatMap({ string($0, limit: limit &+ offset &+ length, depth: depth + 1) })
            else { return nil }
            let units = Array(parent.utf16)
            guard offset + length <= units.count else { return nil }
            return String(decoding: units[offset..<offset + length], as: UTF16.self)
        case layout.strings.externalTag:
            // Bit 4 marks an uncached external string: its characters are only behind the
            // embedder's resource object, whose layout is not V8's.
            guard type & 0x10 == 0, let data = field(object, layout.strings.externalResource + 8) else { return nil }
            return decode(data)
        default:
            return nil
        }
    }
}
