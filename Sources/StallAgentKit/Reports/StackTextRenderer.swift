/// Renders frames the way crash and watchdog reports do:
/// `0   redis-server   0x000055fbfdf2c634 debugCommand + 4420 (debug.c:880)`.
public enum StackTextRenderer {
    public static func lines(_ frames: [SymbolizedFrame], indent: String = "") -> [String] {
        let moduleWidth = min(max(frames.map { ($0.module ?? "???").count }.max() ?? 3, 8), 32)
        return frames.enumerated().map { position, frame in
            let number = String(position).padding(toLength: 4, withPad: " ", startingAt: 0)
            let module = (frame.module ?? "???").padding(toLength: moduleWidth, withPad: " ", startingAt: 0)
            let address = "0x" + String(String(frame.address, radix: 16).reversed())
                .padding(toLength: 16, withPad: "0", startingAt: 0).reversed()
            var text = "\(indent)\(number)\(module)  \(address) \(frame.displayName)"
            if let file = frame.file { text += " (\(file)" + (frame.line.map { ":\($0)" } ?? "") + ")" }
            if frame.isSignalFrame { text += " <signal handler called>" }
            return text
        }
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
        if let file = frame.file { text += " [\(file)" + (frame.line.map { ":\($0)" } ?? "") + "]" }
        return text
    }
}
