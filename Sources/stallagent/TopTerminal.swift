import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The terminal while `top` runs: keys read one at a time without echo (so q quits at once),
/// Ctrl-C still a signal, the screen redrawn in place; all restored at the end.
final class TopTerminal {
    private var saved = termios()
    private var raw = false
    private var ended = false

    var columns: Int {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 80
    }

    func begin() {
        if isatty(STDIN_FILENO) != 0, tcgetattr(STDIN_FILENO, &saved) == 0 {
            var settings = saved
            settings.c_lflag &= ~tcflag_t(ICANON | ECHO)
            // Reads return at once with what there is: the loop polls between probes.
            withUnsafeMutableBytes(of: &settings.c_cc) { bytes in
                bytes[Int(VMIN)] = 0
                bytes[Int(VTIME)] = 0
            }
            raw = tcsetattr(STDIN_FILENO, TCSANOW, &settings) == 0
        }
        // Hide the cursor; the table is drawn from the top-left corner.
        emit("\u{1b}[?25l\u{1b}[H\u{1b}[2J")
    }

    /// True when q (or Q) was typed since the last call.
    func quitPressed() -> Bool {
        guard raw else { return false }
        var byte: UInt8 = 0
        while read(STDIN_FILENO, &byte, 1) == 1 {
            if byte == UInt8(ascii: "q") || byte == UInt8(ascii: "Q") { return true }
        }
        return false
    }

    func draw(_ lines: [String]) {
        // Each line cleared to its end, then everything below: no leftovers from a longer frame.
        let body = lines.map { $0 + "\u{1b}[K" }.joined(separator: "\r\n")
        emit("\u{1b}[H" + body + "\u{1b}[J")
    }

    /// Unfiltered, unlike FileHandleOutput: the escape sequences are the point. Target names
    /// in `lines` went through TerminalSanitizer in TopScreen.
    private func emit(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            if written > 0 {
                bytes = bytes.dropFirst(written)
            } else if !(written < 0 && errno == EINTR) {
                return
            }
        }
    }

    func end() {
        guard !ended else { return }
        ended = true
        if raw { tcsetattr(STDIN_FILENO, TCSANOW, &saved) }
        emit("\u{1b}[H\u{1b}[2J\u{1b}[?25h")
    }
}
