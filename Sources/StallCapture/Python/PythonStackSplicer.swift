import StallSymbols
/// Python frames in a symbolized native stack (`ScriptStackSplicer`): each
/// `_PyEval_EvalFrameDefault` activation gets, just above it, the Python functions it runs.
public enum PythonStackSplicer {
    static let evaluatorFunctions: Set<String> = ["_PyEval_EvalFrameDefault"]

    public static func splice(_ native: [SymbolizedFrame], _ python: PythonStack) -> [SymbolizedFrame] {
        guard !python.isEmpty else { return native }
        return ScriptStackSplicer.splice(native, python.activations.map { $0.map(symbolized) }, evaluators: evaluatorFunctions)
    }

    /// A Python function as a report frame: no module offset or build-id (nothing to
    /// symbolicate later); the bytecode instruction's address as its address and, as its stack
    /// address, the interpreter frame's address mixed with the caller's first slot
    /// (`PythonFrame.callerSlot`), so activations are told apart like native ones — including
    /// two calls that reuse one interpreter frame. Unchanged for a frame without a caller.
    static func symbolized(_ frame: PythonFrame) -> SymbolizedFrame {
        SymbolizedFrame(
            index: 0, address: frame.instruction, stackPointer: frame.frameAddress &+ frame.callerSlot &* 0x9E37_79B9_7F4A_7C15,
            module: SymbolizedFrame.pythonModule,
            modulePath: nil, buildId: nil, moduleOffset: nil, function: frame.qualifiedName, functionOffset: nil,
            approximate: false, file: frame.file, line: frame.line, language: SymbolizedFrame.pythonLanguage)
    }
}
