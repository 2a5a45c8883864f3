import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Processes started the way a shell or a CI runner starts them: every signal unblocked and
/// at its default action. Foundation's Process passes on the spawning thread's signal mask,
/// and test threads (Dispatch workers) block SIGCHLD and SIGINT, so a shell started through it
/// can hang in `wait` or ignore Ctrl-C.
enum CleanProcess {
    enum Ending: Equatable {
        case exited(Int32)
        case signaled(Int32)
    }

    /// Starts `path`; with `newSession` as the leader of a new session without a controlling
    /// terminal (its process group is then its own to signal). Output goes to the given files.
    static func spawn(
        _ path: String, _ arguments: [String], newSession: Bool = false,
        stdout: String = "/dev/null", stderr: String = "/dev/null"
    ) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        var all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        // POSIX_SPAWN_SETSID (glibc 2.26+) is defined only under _GNU_SOURCE, which the Glibc
        // module does not import.
        let setsid: Int32 = 0x80
        let flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | (newSession ? setsid : 0)
        posix_spawnattr_setflags(&attributes, Int16(flags))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
        guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .EINVAL) }
        return pid
    }

    /// Waits (polling, with a generous deadline) for `pid` and decodes its wait status; on
    /// the deadline kills it and returns nil.
    static func wait(_ pid: pid_t, timeout: Double = 60) -> Ending? {
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        while Date() < deadline {
            if waitpid(pid, &status, WNOHANG) == pid {
                let sig = status & 0x7f
                return sig == 0 ? .exited((status >> 8) & 0xff) : .signaled(sig)
            }
            usleep(20_000)
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
        return nil
    }

    /// `/bin/sh -c script` to completion: its exit status (128 + N for signal N, -1 on the
    /// deadline) and output.
    static func runShell(_ script: String, timeout: Double = 60) throws -> CommandResult {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("clean-\(UUID().uuidString)").path
        defer {
            unlink(base + ".out")
            unlink(base + ".err")
        }
        let pid = try spawn("/bin/sh", ["-c", script], stdout: base + ".out", stderr: base + ".err")
        let status: Int32
        switch wait(pid, timeout: timeout) {
        case .exited(let code): status = code
        case .signaled(let sig): status = 128 + sig
        case nil: status = -1
        }
        return CommandResult(
            status: status,
            stdout: (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? "")
    }
}
