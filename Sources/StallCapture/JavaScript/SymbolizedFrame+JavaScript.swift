extension SymbolizedFrame {
    /// A V8 frame as its JavaScript function: its address is the function's (its
    /// SharedFunctionInfo's), as a Python frame's is its bytecode's, since every interpreted
    /// frame returns to the same trampoline; the stack address stays (an activation is told
    /// apart as a native one is); the module column says `js`, the script and line are the
    /// file and line.
    public init(javascript function: JavaScriptFrame, index: Int, stackPointer: UInt64) {
        self.init(
            index: index, address: function.shared, stackPointer: stackPointer, module: SymbolizedFrame.javascriptModule,
            modulePath: nil, buildId: nil, moduleOffset: nil, function: function.name, functionOffset: nil, approximate: false,
            file: function.script, line: function.line, language: SymbolizedFrame.javascriptLanguage)
    }
}
