import StallSymbols
/// One Ruby call read from a Ruby process (`RubyFrameReader`).
public struct RubyFrame: Sendable, Equatable {
    /// The frame's label as Ruby's backtraces give it: "checkout", "block in serve", "<main>";
    /// a C method's called name ("sleep", "each").
    public var name: String
    /// The script; nil for a method written in C.
    public var file: String?
    /// The line executing in the frame, nil for a C method.
    public var line: Int?
    /// The iseq's address (a C method's entry's): one per method, the frame's address in reports.
    public var code: UInt64
    /// The control frame's address: the frame's stack address, telling calls apart.
    public var controlFrame: UInt64
}

/// The Ruby frames of one sample, grouped by the `rb_vm_exec` activation that runs them
/// (innermost activation first; each group innermost frame first), as `PHPStack` is.
public struct RubyStack: Sendable {
    public var activations: [[RubyFrame]]
    public var note: String?

    public var isEmpty: Bool { activations.allSatisfy(\.isEmpty) }

    public init(activations: [[RubyFrame]], note: String? = nil) {
        self.activations = activations
        self.note = note
    }
}

extension SymbolizedFrame {
    /// "ruby": a Ruby method or block spliced into the native stack.
    public static let rubyLanguage = "ruby"
    /// The module column of a Ruby frame: its script is in `file`.
    public static let rubyModule = "ruby"

    public var isRuby: Bool { language == SymbolizedFrame.rubyLanguage }

    /// A Ruby call as a report frame: its iseq's address as its address (every Ruby frame runs
    /// in the same VM code), its control frame's as its stack address.
    public init(ruby frame: RubyFrame, index: Int) {
        self.init(
            index: index, address: frame.code, stackPointer: frame.controlFrame, module: SymbolizedFrame.rubyModule,
            modulePath: nil, buildId: nil, moduleOffset: nil, function: frame.name, functionOffset: nil, approximate: false,
            file: frame.file, line: frame.line, language: SymbolizedFrame.rubyLanguage)
    }
}

/// Ruby frames in a symbolized native stack (`ScriptStackSplicer`): each `rb_vm_exec`
/// activation (Ruby calls Ruby without recursing in C) gets the Ruby calls it runs.
public enum RubyStackSplicer {
    static let evaluatorFunctions: Set<String> = ["rb_vm_exec"]

    public static func splice(_ native: [SymbolizedFrame], _ ruby: RubyStack) -> [SymbolizedFrame] {
        guard !ruby.isEmpty else { return native }
        return ScriptStackSplicer.splice(
            native, ruby.activations.map { $0.map { SymbolizedFrame(ruby: $0, index: 0) } }, evaluators: evaluatorFunctions)
    }
}
