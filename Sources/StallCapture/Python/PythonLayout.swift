/// Where CPython keeps what a stack reader needs, for one interpreter version.
///
/// 3.13 publishes these offsets itself (`_Py_DebugOffsets` at the start of `_PyRuntime`);
/// 3.11 and 3.12 do not, so their layouts are written here, taken from the interpreters'
/// own debug info (`ptype /o` in gdb on pyenv's 3.11.7 and 3.12.1) and valid for every
/// patch release of the minor version (CPython keeps these internal structs fixed within one).
public struct PythonLayout: Sendable, Equatable {
    public var major: Int
    public var minor: Int

    // _PyRuntimeState
    var runtimeInterpretersHead: UInt64
    // PyInterpreterState
    var interpreterThreadsHead: UInt64
    // PyThreadState
    var threadNext: UInt64
    var threadNativeID: UInt64
    /// 3.11/3.12 reach the frame through `cframe->current_frame`; 3.13 keeps it in the
    /// thread state (`cframeCurrentFrame` nil).
    var threadFrame: UInt64
    var cframeCurrentFrame: UInt64?
    // _PyInterpreterFrame
    var framePrevious: UInt64
    var frameCode: UInt64
    var frameInstruction: UInt64
    var frameOwner: UInt64
    /// 3.11 only: the flag marking the first frame of a `_PyEval_EvalFrameDefault` activation.
    /// 3.12+ put a shim frame owned by the C stack there instead.
    var frameIsEntry: UInt64?
    /// `localsplus[0]`: the frame's first local (or, with no locals, its value stack's bottom).
    /// The same offset in 3.11–3.13; 3.13 also states it in its debug offsets.
    var frameFirstLocal: UInt64 = 72
    /// 3.11/3.12 keep the last executed instruction (`prev_instr`), 3.13 the current one
    /// (`instr_ptr`); both give the line the same way.
    var instructionIsPrevious: Bool
    // PyCodeObject
    var codeFilename: UInt64
    var codeName: UInt64
    var codeQualname: UInt64
    var codeLinetable: UInt64
    var codeFirstLineNumber: UInt64
    var codeAdaptive: UInt64
    var objects: Objects
    /// PyObject, PyASCIIObject, PyBytesObject: how a name or a line table is read.
    struct Objects: Sendable, Equatable {
        var objectType: UInt64 = 8
        var unicodeState: UInt64 = 32
        var unicodeLength: UInt64 = 16
        var asciiObjectSize: UInt64
        var compactObjectSize: UInt64
        var bytesSize: UInt64 = 16
        var bytesData: UInt64 = 32
    }

    /// `FRAME_OWNED_BY_CSTACK` (3.12+): the entry shim, not a Python function.
    static let ownedByCStack: UInt8 = 3

    /// Bytes of a `_PyInterpreterFrame` read per frame (covers every field used above).
    var frameReadSize: Int {
        Int([framePrevious, frameCode, frameInstruction, frameOwner, frameIsEntry ?? 0, frameFirstLocal].max()! + 8)
    }

    public var version: String { "\(major).\(minor)" }

    /// The built-in layouts (3.11, 3.12); 3.13+ come from the interpreter's debug offsets.
    public static func builtIn(major: Int, minor: Int) -> PythonLayout? {
        guard major == 3 else { return nil }
        switch minor {
        case 11:
            return PythonLayout(
                major: 3, minor: 11, runtimeInterpretersHead: 40, interpreterThreadsHead: 16, threadNext: 8,
                threadNativeID: 160, threadFrame: 56, cframeCurrentFrame: 8, framePrevious: 48, frameCode: 32,
                frameInstruction: 56, frameOwner: 69, frameIsEntry: 68, instructionIsPrevious: true,
                codeFilename: 112, codeName: 120, codeQualname: 128, codeLinetable: 136, codeFirstLineNumber: 72,
                codeAdaptive: 184, objects: Objects(asciiObjectSize: 48, compactObjectSize: 72))
        case 12:
            return PythonLayout(
                major: 3, minor: 12, runtimeInterpretersHead: 40, interpreterThreadsHead: 72, threadNext: 8,
                threadNativeID: 144, threadFrame: 56, cframeCurrentFrame: 0, framePrevious: 8, frameCode: 0,
                frameInstruction: 56, frameOwner: 70, frameIsEntry: nil, instructionIsPrevious: true,
                codeFilename: 112, codeName: 120, codeQualname: 128, codeLinetable: 136, codeFirstLineNumber: 68,
                codeAdaptive: 192, objects: Objects(asciiObjectSize: 40, compactObjectSize: 56))
        default:
            return nil
        }
    }

    /// The layout described by 3.13's `_Py_DebugOffsets` (`bytes` from the start of
    /// `_PyRuntime`). The struct itself changes between minor versions, so only the 3.13
    /// arrangement is read; another version, or a free-threaded build (different object
    /// headers), is refused by the caller with a note.
    static func fromDebugOffsets(_ bytes: [UInt8]) -> (layout: PythonLayout?, version: (Int, Int)?, freeThreaded: Bool) {
        guard bytes.count >= 584, Array(bytes[0..<8]) == Array("xdebugpy".utf8) else { return (nil, nil, false) }
        func word(_ offset: Int) -> UInt64 { TargetReader.word(bytes, offset) }
        let hex = word(8)
        let major = Int((hex >> 24) & 0xff)
        let minor = Int((hex >> 16) & 0xff)
        let freeThreaded = word(16) != 0
        guard major == 3, minor == 13, !freeThreaded else { return (nil, (major, minor), freeThreaded) }
        let layout = PythonLayout(
            major: 3, minor: 13, runtimeInterpretersHead: word(40), interpreterThreadsHead: word(72),
            threadNext: word(168), threadNativeID: word(200), threadFrame: word(184), cframeCurrentFrame: nil,
            framePrevious: word(232), frameCode: word(240), frameInstruction: word(248), frameOwner: word(264),
            frameIsEntry: nil, frameFirstLocal: word(256), instructionIsPrevious: false, codeFilename: word(280), codeName: word(288),
            codeQualname: word(296), codeLinetable: word(304), codeFirstLineNumber: word(312),
            codeAdaptive: word(344),
            objects: Objects(
                objectType: word(360), unicodeState: word(544), unicodeLength: word(552), asciiObjectSize: word(560),
                compactObjectSize: word(560) + 16, bytesSize: word(520), bytesData: word(528)))
        // Each offset must lie inside the struct whose size the block gives, and the sizes must
        // be plausible: otherwise the block is corrupt or foreign.
        let sizes = (runtime: word(24), interpreter: word(48), thread: word(152), frame: word(224), code: word(272))
        guard sizes.runtime < 1 << 24, sizes.interpreter < 1 << 24, sizes.thread < 1 << 16, sizes.frame < 1 << 12,
            sizes.code < 1 << 12, layout.runtimeInterpretersHead < sizes.runtime,
            layout.interpreterThreadsHead < sizes.interpreter,
            [layout.threadNext, layout.threadNativeID, layout.threadFrame].allSatisfy({ $0 < sizes.thread }),
            [layout.framePrevious, layout.frameCode, layout.frameInstruction, layout.frameOwner, layout.frameFirstLocal].allSatisfy({
                $0 < sizes.frame
            }),
            [
                layout.codeFilename, layout.codeName, layout.codeQualname, layout.codeLinetable, layout.codeFirstLineNumber,
                layout.codeAdaptive,
            ].allSatisfy({ $0 <= sizes.code })
        else { return (nil, (major, minor), false) }
        let all = [
            layout.runtimeInterpretersHead, layout.interpreterThreadsHead, layout.threadNext, layout.threadNativeID,
            layout.threadFrame, layout.framePrevious, layout.frameCode, layout.frameInstruction, layout.frameOwner,
            layout.codeFilename, layout.codeName, layout.codeQualname, layout.codeLinetable,
            layout.codeFirstLineNumber, layout.codeAdaptive, layout.objects.asciiObjectSize,
        ]
        guard all.allSatisfy({ $0 < 1 << 24 }) else { return (nil, (major, minor), false) }
        return (layout, (major, minor), false)
    }
}
