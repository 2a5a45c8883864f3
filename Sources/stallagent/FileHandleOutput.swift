import Foundation
import StallReports

#if canImport(Glibc)
import Glibc
#endif

/// Swift 6 forbids touching C's `stdout`/`stderr` globals; stdout goes through `print` (the
/// same C buffer the rest of the program prints into, so lines keep their order) and is
/// flushed at once, stderr is written unbuffered with write(2), as C's stderr is.
enum FileHandleOutput {
    /// Lines are the agent's own, but may carry target strings: no control character other
    /// than the newline reaches the terminal.
    static func standardError(_ text: String) {
        // write(2), not FileHandle: a closed stderr must cost the line, not crash the agent.
        var bytes = Array(TerminalSanitizer.keepingNewlines(text).utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if written > 0 {
                bytes = bytes.dropFirst(written)
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }

    static func standardOutput(_ text: String) {
        print(TerminalSanitizer.keepingNewlines(text), terminator: "")
        fflush(nil)
    }
}
