/// Merges Python frames into a symbolized native stack, as `py-spy dump --native` does: each
/// `_PyEval_EvalFrameDefault` activation gets, just above it, the Python functions it runs.
///
/// The k-th evaluator frame from the top runs the k-th activation of the Python chain (both
/// lists are innermost first, and each activation of the evaluator pushes one entry frame).
/// Activations left over when the native stack has fewer evaluator frames (an unwind that
/// ended early) go below the last native frame, in order, so no Python frame is lost.
public enum PythonStackSplicer {
    static let evaluatorFunctions: Set<String> = ["_PyEval_EvalFrameDefault"]

    public static func splice(_ native: [SymbolizedFrame], _ python: PythonStack) -> [SymbolizedFrame] {
        guard !python.isEmpty else { return native }
        var pending = python.activations[...]
        var result: [SymbolizedFrame] = []
        result.reserveCapacity(native.count + python.activations.reduce(0) { $0 + $1.count })
        for frame in native {
            if let name = frame.function, !frame.approximate, evaluatorFunctions.contains(name),
                let activation = pending.popFirst()
            {
                result.append(contentsOf: activation.map(symbolized))
            }
            result.append(frame)
        }
        for activation in pending { result.append(contentsOf: activation.map(symbolized)) }
        for index in result.indices { result[index].index = index }
        return result
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
