#if canImport(Glibc)
import Glibc
#endif

/// Whether the next byte written to a file descriptor starts a line.
///
/// The wrapped command shares the agent's stdout, unpiped, so the agent never sees what it
/// wrote. Only a regular file remembers: the byte before the write position is read back
/// through /proc/self/fd (stdout is usually open write-only). A pipe or a terminal — a CI
/// runner's log is a pipe — cannot tell, so the answer there is "no": a blank line costs
/// nothing, while an annotation glued to the command's last line is lost.
public enum OutputLineStart {
    public static func isAtLineStart(fd: Int32) -> Bool {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return false }
        let appending = fcntl(fd, F_GETFL) & O_APPEND != 0
        let position = appending ? info.st_size : lseek(fd, 0, SEEK_CUR)
        if position == 0 { return true }
        guard position > 0 else { return false }
        let reader = open("/proc/self/fd/\(fd)", O_RDONLY | O_CLOEXEC)
        guard reader >= 0 else { return false }
        defer { close(reader) }
        var byte: UInt8 = 0
        return pread(reader, &byte, 1, position - 1) == 1 && byte == UInt8(ascii: "\n")
    }
}
