import CPosix

import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// A helper program the agent starts (systemctl, the demo's fixture) the way a shell would:
/// every signal unblocked and at its default action. Foundation's `Process` passes on the
/// spawning thread's mask, and the agent's threads block the signals its `SignalInbox` reads,
/// so a child started through it could not be stopped by SIGTERM or Ctrl-C.
public struct ChildProcess: Sendable {
    public let pid: pid_t

    /// Starts `path` with `arguments`; `environment` nil passes the agent's own. Each of
    /// `stdin`, `stdout`, `stderr` is a descriptor the child gets in its place, or -1 to share
    /// the agent's. With `newGroup` the child leads a process group of its own, out of reach
    /// of the terminal's Ctrl-C. `directory` nil starts it in the agent's working directory.
    public static func spawn(
        _ path: String, _ arguments: [String], environment: [String: String]? = nil,
        stdin: Int32 = -1, stdout: Int32 = -1, stderr: Int32 = -1, newGroup: Bool = false, directory: String? = nil
    ) throws -> ChildProcess {
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer {
            argv.forEach { free($0) }
            envp?.forEach { free($0) }
        }
        var pid: pid_t = 0
        let stdio = [stdin, stdout, stderr]
        let group: Int32 = newGroup ? 1 : 0
        let rc =
            envp.map { sa_spawn_stdio(path, argv, $0, group, stdio, directory, &pid) }
            ?? sa_spawn_stdio(path, argv, environ, group, stdio, directory, &pid)
        guard rc == 0 else { throw StallAgentError.system(operation: "spawn \(path)", errno: rc) }
        return ChildProcess(pid: pid)
    }

    /// Waits for the child to end: its exit status, or 128 + N if signal N killed it.
    @discardableResult
    public func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return -1 }
        }
        let sig = status & 0x7f
        return sig == 0 ? (status >> 8) & 0xff : 128 + sig
    }

    /// Runs `path` to completion with stdin from /dev/null: its status and output.
    public static func run(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws
        -> (status: Int32, stdout: String, stderr: String)
    {
        var out: [Int32] = [-1, -1]
        var err: [Int32] = [-1, -1]
        guard sa_pipe_cloexec(&out) == 0 else { throw StallAgentError.system(operation: "pipe", errno: errno) }
        guard sa_pipe_cloexec(&err) == 0 else {
            let code = errno
            close(out[0])
            close(out[1])
            throw StallAgentError.system(operation: "pipe", errno: code)
        }
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer {
            close(out[0])
            close(err[0])
            if null >= 0 { close(null) }
        }
        let child: ChildProcess
        do {
            child = try spawn(path, arguments, environment: environment, stdin: null, stdout: out[1], stderr: err[1])
        } catch {
            close(out[1])
            close(err[1])
            throw error
        }
        close(out[1])
        close(err[1])
        // One after the other: the helpers run here (systemctl show) write a few lines.
        let stdout = readToEnd(out[0])
        let stderr = readToEnd(err[0])
        return (child.wait(), stdout, stderr)
    }

    private static func readToEnd(_ fd: Int32) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                bytes += buffer[..<n]
            } else if n < 0, errno == EINTR {
                continue
            } else {
                break
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
