import ArgumentParser
import Foundation
import StallProc
import StallMonitoring
import StallWrapper

#if canImport(Glibc)
import Glibc
#endif

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a command (e.g. a test suite) and report the stalls of it and its descendants.",
        discussion: """
            stallagent [options] -- COMMAND [ARGS…]  (same as `stallagent run [options] -- …`)

            The command keeps stdin/stdout/stderr; INT, TERM, HUP, QUIT, USR1 and USR2 are \
            forwarded to it, each exactly once: with a controlling terminal the command stays \
            in the agent's process group (job control works; Ctrl-C reached it already and is \
            not sent again); without one (CI, systemd, cron) it leads a group of its own, and \
            INT, TERM and HUP go to that whole group. Every descendant is reaped. A process that \
            runs an event loop (seen idle at least once) is watched for stalls as with --pid; \
            a batch process that never idles (a test runner) is watched with the batch rule: \
            a frame outside the runner's own frames held in every sample past \
            --batch-threshold (default: --threshold) is a stall, named by the innermost held \
            frame (the slow test's function). A parent waiting for its child (wait4) is not \
            stalled: the child is watched itself.

            Exit status, as timeout(1): the command's, whatever its value (0-255), or 128+N if \
            signal N killed it; if the agent received INT, TERM or HUP and the command died of \
            it, the agent dies of that signal too, so a shell loop stops on Ctrl-C. 86 if \
            --on-stall fail and stalls were found while the command succeeded; 87 if the command \
            succeeded but its own process could not be watched (a setuid or file-capability \
            program and an agent without CAP_SYS_PTRACE; each such process is named on stderr \
            and counted in the summary line); 124 if --timeout \
            expired or --kill-after terminated a stalled process (the JUnit file, annotations \
            and step summary then fail too); 125 the agent's own error, found before the \
            command starts (bad option, unusable report directory or --junit file); 126 the \
            command cannot be executed; 127 it was not found.
            """)

    @Option(name: Settings.onStall.longName, help: Settings.onStall.argumentHelp)
    var onStall: SettingArgument<OnStall>?

    @Option(name: Settings.timeout.longName, parsing: .unconditional, help: Settings.timeout.argumentHelp)
    var timeout: SettingArgument<TimeSpan>?

    @Option(
        name: .customLong("follow"),
        help: ArgumentHelp("Watch only descendants whose name contains NAME (repeatable); the command itself is always watched.", valueName: "name"))
    var follow: [String] = []

    @Option(
        help: ArgumentHelp(
            "Write a JUnit XML file: a failing testcase per stall and per process captured at --timeout (checked writable before the command starts).",
            valueName: "file"))
    var junit: String?

    @Option(name: Settings.batchThreshold.longName, parsing: .unconditional, help: Settings.batchThreshold.argumentHelp)
    var batchThreshold: SettingArgument<TimeSpan>?

    @Flag(help: "Preload libstallprobe.so into the command: exact event-loop boundaries from inside (epoll_wait, poll, select on the main thread).")
    var loopProbe = false

    @OptionGroup var watch: WatchOptions

    @Argument(parsing: .postTerminator, help: "The command to run.")
    var command: [String] = []

    func validate() throws {
        guard !command.isEmpty else { throw ValidationError("no command after --") }
        _ = try runOptions()
    }

    /// The run's settings from this command line (`RunOptions.settingBindings`).
    func runOptions() throws -> RunOptions {
        do throws(SettingProblem) {
            return try RunOptions(commandLine: CommandLineSettings.given(in: self))
        } catch {
            throw ValidationError(error.description)
        }
    }

    func run() throws {
        var options = RunOptions()
        do {
            options = try runOptions()
            options.follow = follow
            if loopProbe {
                let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
                let library = me.deletingLastPathComponent().appendingPathComponent("libstallprobe.so").path
                guard FileManager.default.fileExists(atPath: library) else {
                    throw ValidationError("--loop-probe: \(library) is missing; scripts/setup builds it")
                }
                options.loopProbeLibrary = library
            }
        } catch let error as ValidationError {
            FileHandleOutput.standardError("stallagent: error: \(error.message)\n")
            throw ExitCode(RunExitCode.agentError)
        }
        let runner = CommandRunner(command: command, options: options, log: { FileHandleOutput.standardError($0 + "\n") })
        let started = Date()
        let outcome: RunOutcome
        do {
            // A JUnit file that cannot be written would turn a red run green in CI: refuse
            // before the command starts, not after it ran for an hour.
            if let junit { try JUnitReport.checkWritable(junit) }
            outcome = try runner.run()
        } catch let error as CommandRunner.RunError {
            FileHandleOutput.standardError("stallagent: \(error)\n")
            throw ExitCode(error.exitCode)
        } catch let error as StallAgentError {
            FileHandleOutput.standardError("stallagent: error: \(error)\n")
            throw ExitCode(RunExitCode.agentError)
        }
        if let junit {
            do {
                try JUnitReport.write(
                    JUnitReport.render(outcome: outcome, command: command, seconds: Date().timeIntervalSince(started)), to: junit)
            } catch {
                FileHandleOutput.standardError("stallagent: warning: could not write \(junit): \(error.localizedDescription)\n")
            }
        }
        if GitHubActionsOutput.isActive {
            GitHubActionsOutput.emit(outcome: outcome, reportDirectory: options.monitor.reportDirectory, write: FileHandleOutput.standardOutput)
        }
        if !outcome.stalls.isEmpty || outcome.expiredTimeout != nil {
            FileHandleOutput.standardError(RunSummaryTable.render(outcome: outcome, reportDirectory: options.monitor.reportDirectory) + "\n")
        }
        if !options.monitor.quiet {
            let line = outcome.summaryLine(
                command: command[0], wallSeconds: Date().timeIntervalSince(started),
                agentCPUSeconds: AgentResourceUsage.cpuAndPeak().cpuSeconds)
            FileHandleOutput.standardError(line + "\n")
        }
        throw WrappedCommandExit(status: outcome.status, dieOfSignal: outcome.dieOfSignal)
    }
}

/// The end of a wrapped run. Not an `ExitCode`: the agent maps its own failures (1, 64) to
/// 125 by value, and the command's status must pass through whatever its value.
struct WrappedCommandExit: Error {
    var status: Int32
    var dieOfSignal: Int32?
}
