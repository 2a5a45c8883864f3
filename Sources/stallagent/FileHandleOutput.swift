import Foundation
import StallProc
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
        writeAll(Array(TerminalSanitizer.keepingNewlines(text).utf8), to: STDERR_FILENO)
    }

    static func standardOutput(_ text: String) {
        // Whatever print() buffered first, then ours, in order.
        fflush(nil)
        writeAll(Array(TerminalSanitizer.keepingNewlines(text).utf8), to: STDOUT_FILENO)
    }

    /// How long one write may wait for a full pipe that is non-blocking: the agent's main
    /// loop waits with it.
    static let fullPipeWait = 5.0

    /// write(2), not FileHandle: a closed stream must cost the line, not crash the agent. A
    /// wrapped command shares the agent's stderr and stdout, and Node makes them non-blocking
    /// (O_NONBLOCK is on the shared file description): a full pipe then answers EAGAIN, and
    /// the agent's stall lines and summary were dropped (issue 27). It waits for the reader
    /// instead, up to `fullPipeWait` per write.
    static func writeAll(_ text: [UInt8], to fd: Int32) {
        var bytes = text[...]
        var deadline: Double?
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written > 0 {
                bytes = bytes.dropFirst(written)
            } else if written < 0 && errno == EINTR {
                continue
            } else if written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                let now = MonotonicTime.seconds()
                let end = deadline ?? now + fullPipeWait
                deadline = end
                guard now < end else { return }
                var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&ready, 1, Int32(max(1, (end - now) * 1000)))
            } else {
                return
            }
        }
    }
}
