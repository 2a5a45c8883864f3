/// The one place target-controlled text (comm, argv, paths, symbol and DWARF file names, all
/// chosen by whoever owns the watched process) is made safe for terminals, logs and line-based
/// formats: control characters become visible escapes (`\x1b`, `\x0a`), so no escape sequence
/// reaches a terminal, no carriage return overwrites a line, and no newline forges a line.
/// C1 controls (0x80–0x9f, which some terminals take as CSI) and the Unicode bidirectional
/// overrides (which reorder what a reader sees) are escaped as `\u{…}`. JSON and XML writers
/// keep their own escaping and do not use this.
public enum TerminalSanitizer {
    /// `text` as one line: every control character, newlines included, escaped.
    public static func line(_ text: String) -> String { escape(text, keepNewlines: false) }

    /// Each element as one line (renderers build reports as arrays of lines).
    public static func lines(_ lines: [String]) -> [String] { lines.map(line) }

    /// For text the agent itself composed of several lines (log messages): newlines are kept,
    /// every other control character escaped. Target strings inside it must already have gone
    /// through `line`.
    public static func keepingNewlines(_ text: String) -> String { escape(text, keepNewlines: true) }

    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        return v < 0x20 || v == 0x7f || (v >= 0x80 && v <= 0x9f) || (v >= 0x202a && v <= 0x202e)
            || (v >= 0x2066 && v <= 0x2069) || v == 0x200e || v == 0x200f || v == 0x061c
    }

    private static func escape(_ text: String, keepNewlines: Bool) -> String {
        // Fast path: nearly every string is clean.
        if !text.unicodeScalars.contains(where: needsEscape) { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if keepNewlines && scalar == "\n" || !needsEscape(scalar) {
                out.append(scalar)
                continue
            }
            let v = scalar.value
            let hex = String(v, radix: 16)
            let escaped = v < 0x80 ? "\\x" + (hex.count < 2 ? "0" + hex : hex) : "\\u{\(hex)}"
            out.append(contentsOf: escaped.unicodeScalars)
        }
        return String(out)
    }
}

extension String {
    /// `TerminalSanitizer.line(self)`: for a target-controlled string interpolated into a line.
    public var terminalSafe: String { TerminalSanitizer.line(self) }
}
