import StallSymbols
/// Merges an interpreter's script frames into a symbolized native stack, as `py-spy dump
/// --native` does: each activation of the interpreter's evaluator function gets, just above
/// it, the script functions it runs (CPython's `_PyEval_EvalFrameDefault`, PHP's `execute_ex`).
///
/// The k-th evaluator frame from the top runs the k-th activation (both lists are innermost
/// first, and each entry into the evaluator from C starts one activation). Activations left
/// over when the native stack has fewer evaluator frames (an unwind that ended early) go below
/// the last native frame, in order, so no script frame is lost.
public enum ScriptStackSplicer {
    public static func splice(_ native: [SymbolizedFrame], _ activations: [[SymbolizedFrame]], evaluators: Set<String>) -> [SymbolizedFrame] {
        guard activations.contains(where: { !$0.isEmpty }) else { return native }
        var pending = activations[...]
        var result: [SymbolizedFrame] = []
        result.reserveCapacity(native.count + activations.reduce(0) { $0 + $1.count })
        for frame in native {
            if let name = frame.function, !frame.approximate, !frame.isScript, evaluators.contains(name),
                let activation = pending.popFirst()
            {
                result.append(contentsOf: activation)
            }
            result.append(frame)
        }
        for activation in pending { result.append(contentsOf: activation) }
        for index in result.indices { result[index].index = index }
        return result
    }
}
