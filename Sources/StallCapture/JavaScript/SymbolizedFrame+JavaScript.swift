import StallSymbols
extension SymbolizedFrame {
    /// A V8 frame as its JavaScript function: its address is the function's (its
    /// SharedFunctionInfo's), as a Python frame's is its bytecode's, since every interpreted
    /// frame returns to the same trampoline; its stack address is its frame pointer, which stays
    /// when V8 replaces the frame by code of another tier, where the stack pointer in it moves
    /// (by 8 bytes, back and forth, in a `node --test` test spinning in one call of `busy`: its
    /// test frame was taken for the runner's and the test cut in pieces). The module column
    /// says `js`, the script and line are the file and line.
    public init(javascript function: JavaScriptFrame, index: Int, frame: UnwoundFrame) {
        self.init(
            index: index, address: function.shared, stackPointer: frame.framePointer ?? frame.stackPointer, module: SymbolizedFrame.javascriptModule,
            modulePath: nil, buildId: nil, moduleOffset: nil, function: function.name, functionOffset: nil, approximate: false,
            file: function.script, line: function.line, language: SymbolizedFrame.javascriptLanguage)
    }
}
