import StallCapture
import StallSymbols

/// Renders frames the way crash and watchdog reports do:
/// `0   redis-server   0x000055fbfdf2c634 debugCommand + 4420 (debug.c:880)`.
public enum StackTextRenderer {
    public static func lines(_ frames: [SymbolizedFrame], indent: String = "") -> [String] {
        let moduleWidth = min(max(frames.map { moduleColumn($0).count }.max() ?? 3, 8), 32)
        let marks = frames.contains { $0.inApp == true }
        return frames.enumerated().flatMap { position, frame in
            // The application's own frames (`AppFrameRule`) are marked where the eye starts, in
            // a column of their own when the stack has any.
            var number = String(position).padding(toLength: marks ? 3 : 4, withPad: " ", startingAt: 0)
            if marks { number += frame.inApp == true ? "* " : "  " }
            let module = moduleColumn(frame).padding(toLength: moduleWidth, withPad: " ", startingAt: 0)
            // A script frame's "address" is its bytecode's or its function's: not code, so not
            // shown in the code-address column (the JSON keeps it).
            let address =
                frame.isScript
                ? String(repeating: " ", count: 18)
                : "0x"
                    + String(String(frame.address, radix: 16).reversed())
                    .padding(toLength: 16, withPad: "0", startingAt: 0).reversed()
            let prefix = "\(indent)\(number)\(module)  \(address) "
            // Inlined functions have no frame of their own: they share the frame's number and
            // address, innermost first, as eu-stack -i and addr2line -i print them.
            var lines = frame.inlined.map { inlined in
                prefix + (inlined.function ?? "???") + " [inlined]" + source(inlined.file, inlined.line)
            }
            var text = prefix + frame.displayName + source(frame.file, frame.line)
            if frame.isSignalFrame { text += " <signal handler called>" }
            lines.append(text)
            return lines
        }
    }

    /// What ran the frame: its module, `[python]`, `[js]`, `[php]` or `[ruby]` for a script's function (its file
    /// follows the name), `[JIT]` for code a perf map named.
    static func moduleColumn(_ frame: SymbolizedFrame) -> String {
        if frame.isPython { return "[python]" }
        if frame.isJavaScript { return "[js]" }
        if frame.isPHP { return "[php]" }
        if frame.isRuby { return "[ruby]" }
        if let module = frame.module { return module }
        return frame.function == nil ? "???" : "[JIT]"
    }

    /// " (debug.c:880)": the file name only; the JSON keeps the full path.
    static func source(_ file: String?, _ line: Int?, open: String = "(", close: String = ")") -> String {
        guard let file else { return "" }
        let name = file.split(separator: "/").last.map(String.init) ?? file
        return " \(open)\(name)" + (line.map { ":\($0)" } ?? "") + close
    }
}

extension StackTextRenderer {
    /// One frame on one line for a header field, as "Stall Frame:" shows it:
    /// `debugCommand + 0x1144 (redis-server) [debug.c:880]`. The offset is hex here, unlike the
    /// frame lines, because it is what a reader pastes into a disassembly.
    public static func summary(_ frame: SymbolizedFrame) -> String {
        var text: String
        if let function = frame.function {
            text = function
            if let offset = frame.functionOffset, offset > 0 { text += " + 0x" + String(offset, radix: 16) }
            if frame.approximate { text += " (approximate)" }
            if let module = frame.module { text += " (\(module))" }
        } else {
            text = frame.displayName
        }
        if let inner = frame.inlined.first, let name = inner.function {
            // The stall is in the inlined code: name it, the line there is the one to read.
            text += " [\(name) inlined" + source(inner.file, inner.line, open: "at ", close: "") + "]"
        } else {
            text += source(frame.file, frame.line, open: "[", close: "]")
        }
        return text
    }
}
