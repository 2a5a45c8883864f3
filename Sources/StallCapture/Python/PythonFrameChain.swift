/// A thread's CPython frame chain as copied at capture time (while the thread was stopped, or
/// while it stayed blocked): only pointers, so the copy is short; code objects are read
/// afterwards with the thread running (`PythonFrameReader.resolve`).
public struct PythonFrameChain: Sendable {
    public struct Raw: Sendable, Equatable {
        /// The `_PyInterpreterFrame`'s address: with the function it identifies an activation.
        public var address: UInt64
        public var code: UInt64
        public var instruction: UInt64
        public var owner: UInt8
        public var isEntry: Bool
        /// `localsplus[0]`, copied with the rest: see `PythonFrame.callerSlot`.
        public var firstLocal: UInt64 = 0
    }

    /// Innermost first.
    public var frames: [Raw]
    /// Why the chain stops early or is missing, in words for the report.
    public var note: String?

    public init(frames: [Raw], note: String?) {
        self.frames = frames
        self.note = note
    }
}

/// One Python function activation, ready to be shown as a frame.
public struct PythonFrame: Sendable, Equatable {
    public var name: String
    public var qualifiedName: String
    public var file: String
    public var line: Int
    public var firstLine: Int
    /// Address of the bytecode instruction: the Python frame's "pc".
    public var instruction: UInt64
    /// The `_PyInterpreterFrame`'s address: the Python frame's "cfa".
    public var frameAddress: UInt64
    /// The first local slot of the Python frame that called this one (0 for the outermost).
    /// A caller's slots cannot change while its callee runs, so this is fixed for the life of
    /// the activation, yet differs between two calls made from the same place at the same
    /// depth — pytest calling one parametrized test function once per parameter set, with the
    /// item as its caller's first argument — which the frame's address alone does not tell apart.
    public var callerSlot: UInt64 = 0
}

/// The Python frames of one capture, grouped by the `_PyEval_EvalFrameDefault` activation that
/// runs them (innermost activation first; each group innermost frame first).
public struct PythonStack: Sendable {
    public var activations: [[PythonFrame]]
    public var note: String?
    /// Interpreter version, e.g. "3.12".
    public var version: String

    public var isEmpty: Bool { activations.allSatisfy(\.isEmpty) }

    package init(activations: [[PythonFrame]], note: String? = nil, version: String) {
        self.activations = activations
        self.note = note
        self.version = version
    }
}
