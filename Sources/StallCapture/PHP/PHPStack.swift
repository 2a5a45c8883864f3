import StallSymbols
/// One PHP function call read from a PHP process (`PHPFrameReader`).
public struct PHPFrame: Sendable, Equatable {
    /// "slow_handler", "Cart::total", "{main}" for a script's top level.
    public var name: String
    /// The script; nil for a function of PHP's own (internal, written in C: `sleep`).
    public var file: String?
    /// The line executing in the frame (the opline's), nil for an internal function.
    public var line: Int?
    /// The `zend_function`'s address: one per function, the frame's address in reports.
    public var function: UInt64
    /// The `zend_execute_data`'s address: the frame's stack address, telling calls apart.
    public var executeData: UInt64
}

/// The PHP frames of one sample, grouped by the `execute_ex` activation that runs them
/// (innermost activation first; each group innermost frame first), as `PythonStack` is.
public struct PHPStack: Sendable {
    public var activations: [[PHPFrame]]
    public var note: String?

    public var isEmpty: Bool { activations.allSatisfy(\.isEmpty) }

    public init(activations: [[PHPFrame]], note: String? = nil) {
        self.activations = activations
        self.note = note
    }
}

extension SymbolizedFrame {
    /// "php": a PHP function spliced into the native stack.
    public static let phpLanguage = "php"
    /// The module column of a PHP frame: its script is in `file`.
    public static let phpModule = "php"

    public var isPHP: Bool { language == SymbolizedFrame.phpLanguage }

    /// A PHP call as a report frame: its function's address as its address (every PHP frame
    /// runs in the same VM code), its execute data's as its stack address.
    public init(php frame: PHPFrame, index: Int) {
        self.init(
            index: index, address: frame.function, stackPointer: frame.executeData, module: SymbolizedFrame.phpModule,
            modulePath: nil, buildId: nil, moduleOffset: nil, function: frame.name, functionOffset: nil, approximate: false,
            file: frame.file, line: frame.line, language: SymbolizedFrame.phpLanguage)
    }
}

/// PHP frames in a symbolized native stack (`ScriptStackSplicer`): each `execute_ex`
/// activation (the VM: PHP calls PHP without recursing in C) gets the PHP calls it runs.
public enum PHPStackSplicer {
    static let evaluatorFunctions: Set<String> = ["execute_ex"]

    public static func splice(_ native: [SymbolizedFrame], _ php: PHPStack) -> [SymbolizedFrame] {
        guard !php.isEmpty else { return native }
        return ScriptStackSplicer.splice(
            native, php.activations.map { $0.map { SymbolizedFrame(php: $0, index: 0) } }, evaluators: evaluatorFunctions)
    }
}
