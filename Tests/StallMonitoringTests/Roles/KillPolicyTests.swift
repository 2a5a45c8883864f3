import Testing

@testable import StallMonitoring
import StallReports

#if canImport(Glibc)
import Glibc
#endif

/// `--kill-after` without a process: signals go to a fake, the pidfd is /dev/null or missing.
@Suite struct KillPolicyTests {
    final class Recorder {
        var lines: [String] = []
        var signals: [Int32] = []
    }

    static func policy(
        pidfd: KillPolicy.Pidfd, errno code: Int32 = 0, recorder: Recorder, limit: Double = 1, grace: Double = 2
    ) -> KillPolicy {
        KillPolicy(
            limit: limit, grace: grace, pid: 4242, pidfd: pidfd, log: { recorder.lines.append($0) },
            deliver: { _, signal in
                recorder.signals.append(signal)
                return code
            })
    }

    static func devNull() -> KillPolicy.Pidfd {
        KillPolicy.Pidfd(fd: open("/dev/null", O_RDONLY), openError: nil)
    }

    /// Issue 27: without a pidfd the process's identity cannot be proven, so nothing is sent,
    /// and the report and stderr say why.
    @Test func withoutAPidfdTheKillIsRefusedAndSaid() {
        let recorder = Recorder()
        let policy = Self.policy(pidfd: KillPolicy.Pidfd(fd: -1, openError: "pidfd_open: No such process"), recorder: recorder)
        let termination = policy.check(stallID: 1, age: 1.5, at: 10)
        #expect(
            termination
                == "not terminated: SIGABRT after 1.50 s (--kill-after) was refused: the process's identity cannot be proven (pidfd_open: No such process)"
        )
        #expect(termination.map(ReportTermination.isRefusal) == true)
        #expect(recorder.signals.isEmpty)
        #expect(recorder.lines.contains { $0.contains("SIGABRT not sent to 4242: the process's identity cannot be proven") })
        // A refused abort is not followed by a SIGKILL.
        #expect(policy.check(stallID: 1, age: 5, at: 20) == nil)
        #expect(recorder.signals.isEmpty)
    }

    @Test func nothingIsSentBeforeTheLimit() {
        let recorder = Recorder()
        let policy = Self.policy(pidfd: Self.devNull(), recorder: recorder)
        #expect(policy.check(stallID: 1, age: 0.99, at: 10) == nil)
        #expect(recorder.signals.isEmpty)
        #expect(recorder.lines.isEmpty)
    }

    /// SIGABRT at the limit, SIGKILL `grace` later if the stall goes on, then nothing more.
    @Test func abortThenKillAfterTheGrace() {
        let recorder = Recorder()
        let policy = Self.policy(pidfd: Self.devNull(), recorder: recorder)
        #expect(policy.check(stallID: 3, age: 1, at: 10) == "terminated by stallagent with SIGABRT after 1.00 s (--kill-after)")
        #expect(recorder.signals == [SIGABRT])
        #expect(policy.check(stallID: 3, age: 2.5, at: 11.5) == nil)
        #expect(
            policy.check(stallID: 3, age: 3, at: 12) == "terminated by stallagent with SIGKILL after 3.00 s (SIGABRT ignored for 2.0 s)")
        #expect(recorder.signals == [SIGABRT, SIGKILL])
        #expect(policy.check(stallID: 3, age: 9, at: 18) == nil)
        #expect(recorder.signals == [SIGABRT, SIGKILL])
        // Another stall gets its own abort.
        #expect(policy.check(stallID: 4, age: 1, at: 30)?.hasPrefix("terminated by stallagent with SIGABRT") == true)
        #expect(recorder.signals == [SIGABRT, SIGKILL, SIGABRT])
    }

    /// A refused signal says what would let it through (CAP_KILL) or that the process is gone.
    @Test func aRefusedSignalSaysWhy() {
        let denied = Recorder()
        let termination = Self.policy(pidfd: Self.devNull(), errno: EPERM, recorder: denied).check(stallID: 1, age: 1, at: 10)
        #expect(termination?.hasPrefix("not terminated: SIGABRT after 1.00 s (--kill-after) was refused: ") == true)
        #expect(termination?.contains("needs CAP_KILL") == true)
        #expect(denied.lines.contains { $0.hasPrefix("stallagent: warning: SIGABRT not sent to 4242") })

        let gone = Recorder()
        let goneKill = Self.policy(pidfd: Self.devNull(), errno: ESRCH, recorder: gone).check(stallID: 1, age: 1, at: 10)
        #expect(goneKill?.hasSuffix("; the process is gone") == true)
    }

    /// An abort ignored past the grace, then a refused SIGKILL: said as a refusal.
    @Test func aRefusedKillAfterAnIgnoredAbortIsARefusal() {
        let recorder = Recorder()
        var code: Int32 = 0
        let policy = KillPolicy(
            limit: 1, grace: 2, pid: 4242, pidfd: Self.devNull(), log: { recorder.lines.append($0) },
            deliver: { _, _ in code })
        _ = policy.check(stallID: 1, age: 1, at: 10)
        code = EPERM
        let termination = policy.check(stallID: 1, age: 3, at: 12)
        #expect(termination?.hasPrefix("not terminated: SIGABRT ignored for 2.0 s, then SIGKILL refused: ") == true)
    }
}
