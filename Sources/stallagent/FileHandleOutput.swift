import StallAgentKit

#if canImport(Glibc)
import Glibc
#endif

enum FileHandleOutput {
    /// Lines are the agent's own, but may carry target strings: no control character other
    /// than the newline reaches the terminal.
    static func standardError(_ text: String) {
        fputs(TerminalSanitizer.keepingNewlines(text), stderr)
    }

    static func standardOutput(_ text: String) {
        fputs(TerminalSanitizer.keepingNewlines(text), stdout)
        fflush(stdout)
    }
}
