import Foundation
import StallMonitoring
import StallProc

#if canImport(Glibc)
import Glibc
#endif

/// A run the bench times: started through the agent's `ChildProcess` (stdin from /dev/null,
/// stdout to `stdout`, stderr to /dev/null, in `directory`) and reaped by a waitpid poll every
/// `pollMicros`. Foundation's `Process` noticed an exit only at its next 20–50 ms tick, which
/// on a one-second run was itself a few per cent of noise.
enum TimedChild {
    /// Runs `arguments` (`arguments[0]` a path) to its end; `everyPoll` runs between polls with
    /// the child's pid. Returns the wall time from just before the spawn and the wait status.
    static func run(
        _ arguments: [String], stdout: String = "/dev/null", directory: String? = nil, pollMicros: UInt32,
        everyPoll: (pid_t) -> Void = { _ in }
    ) throws -> (wallNanos: UInt64, status: Int32) {
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        let out = stdout == "/dev/null" ? null : open(stdout, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        defer {
            if out != null, out >= 0 { close(out) }
            if null >= 0 { close(null) }
        }
        guard null >= 0, out >= 0 else { throw StallAgentError.system(operation: "open \(stdout)", errno: errno) }
        let start = MonotonicTime.nanos()
        let child = try ChildProcess.spawn(
            arguments[0], Array(arguments.dropFirst()), stdin: null, stdout: out, stderr: null, directory: directory)
        var status: Int32 = 0
        while true {
            let result = waitpid(child.pid, &status, WNOHANG)
            if result == child.pid || (result < 0 && errno != EINTR) { break }
            everyPoll(child.pid)
            usleep(pollMicros)
        }
        return (MonotonicTime.nanos() - start, status)
    }
}
