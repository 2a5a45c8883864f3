import Foundation

import StallReports
import CPosix
#if canImport(Glibc)
import Glibc
#endif

/// `--kill-after`: a stall that lasts the limit gets SIGABRT, and SIGKILL if the process is
/// still alive `grace` later. What happened, or why it could not, is the stall's termination
/// text (`ReportTermination`).
final class KillPolicy {
    /// A pidfd opened at attach, so a signal can only reach the process that was watched, never
    /// one that reused its pid; -1 when it could not be opened (the kill is then refused, and
    /// said).
    final class Pidfd {
        let fd: Int32
        let openError: String?

        init(pid: Int32) {
            fd = sa_pidfd_open(pid)
            openError = fd < 0 ? "pidfd_open: " + String(cString: strerror(errno)) : nil
        }

        /// A descriptor already open (or -1 with why not); it is closed with this handle.
        init(fd: Int32, openError: String?) {
            self.fd = fd
            self.openError = openError
        }

        deinit {
            if fd >= 0 { close(fd) }
        }
    }

    let limit: Double
    let grace: Double
    private let pid: Int32
    private let pidfd: Pidfd
    private let log: (String) -> Void
    /// Sends a signal through a pidfd: 0 when sent, else the errno.
    private let deliver: (_ pidfd: Int32, _ signal: Int32) -> Int32
    private var kill: (stallID: Int, abortSentAt: Double, killed: Bool)?

    /// `pid` names the process in what is said; the signal goes through `pidfd` only.
    init(
        limit: Double, grace: Double, pid: Int32, pidfd: Pidfd, log: @escaping (String) -> Void,
        deliver: @escaping (_ pidfd: Int32, _ signal: Int32) -> Int32 = { sa_pidfd_send_signal($0, $1) == 0 ? 0 : errno }
    ) {
        self.limit = limit
        self.grace = grace
        self.pid = pid
        self.pidfd = pidfd
        self.log = log
        self.deliver = deliver
    }

    /// Acts on stall `id`, `age` seconds old: returns its new termination text when a signal
    /// was sent or refused now, nil when nothing was due.
    func check(stallID id: Int, age: Double, at now: Double) -> String? {
        guard age >= limit else { return nil }
        if kill == nil || kill?.stallID != id {
            log("stallagent: stall #\(id) has lasted \(Format.seconds(age)) (--kill-after \(Format.seconds(limit))): sending SIGABRT to \(pid)")
            if let refused = signal(SIGABRT) {
                kill = (id, now, true)
                return ReportTermination.refused(
                    "SIGABRT after " + String(format: "%.2f", age) + " s (--kill-after) was refused: " + refused)
            } else {
                kill = (id, now, false)
                return String(format: "terminated by stallagent with SIGABRT after %.2f s (--kill-after)", age)
            }
        } else if let state = kill, !state.killed, now - state.abortSentAt >= grace {
            log("stallagent: \(pid) still alive \(Format.seconds(grace)) after SIGABRT: sending SIGKILL")
            kill?.killed = true
            if let refused = signal(SIGKILL) {
                return ReportTermination.refused(
                    "SIGABRT ignored for " + String(format: "%.1f", grace) + " s, then SIGKILL refused: " + refused)
            } else {
                return String(
                    format: "terminated by stallagent with SIGKILL after %.2f s (SIGABRT ignored for %.1f s)", age, grace)
            }
        }
        return nil
    }

    /// Signals the watched process through its pidfd. Returns why it did not happen, said on
    /// stderr and kept for the report: a kill that silently failed read "terminated" before.
    private func signal(_ number: Int32) -> String? {
        let name = number == SIGKILL ? "SIGKILL" : "SIGABRT"
        var reason: String?
        if pidfd.fd < 0 {
            reason = "the process's identity cannot be proven (\(pidfd.openError ?? "no pidfd"))"
        } else {
            let code = deliver(pidfd.fd, number)
            if code != 0 {
                reason = String(cString: strerror(code))
                if code == EPERM {
                    reason! += "; signalling another user's process needs CAP_KILL (add it to the unit's CapabilityBoundingSet= and AmbientCapabilities=)"
                }
                if code == ESRCH { reason! += "; the process is gone" }
            }
        }
        if let reason { log("stallagent: warning: \(name) not sent to \(pid): \(reason)") }
        return reason
    }
}
