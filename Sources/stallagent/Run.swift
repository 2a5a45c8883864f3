import ArgumentParser
import Foundation
import StallAgentKit

#if canImport(Glibc)
import Glibc
#endif

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a command (e.g. a test suite) and report the stalls of it and its descendants.",
        discussion: """
            stallagent [options] -- COMMAND [ARGS…]  (same as `stallagent run [options] -- …`)

            The command keeps stdin/stdout/stderr; INT, TERM, HUP, QUIT, USR1 and USR2 are \
            forwarded to it; every descendant is reaped. Each process that runs an event loop \
            (seen idle at least once) is watched for stalls; a test runner that is simply busy \
            is not reported unless --launch-threshold is given.

            Exit status: the command's (128+N if a signal N killed it); 86 if --on-stall fail \
            and stalls were found while the command succeeded; 124 if --timeout expired or \
            --kill-after terminated a stalled process; 125 the agent's own error; 126 the \
            command cannot be executed; 127 it was not found.
            """)

    @Option(help: ArgumentHelp("report: write reports only; fail: also exit 86 if the command succeeded but stalled.", valueName: "report|fail"))
    var onStall = "report"

    @Option(help: ArgumentHelp("Limit for the whole run: snapshot every watched process (0xbaaaaaad reports), then terminate the command (exit 124).", valueName: "duration"))
    var timeout: String?

    @Option(name: .customLong("follow"), help: ArgumentHelp("Watch only descendants whose name contains NAME (repeatable); the command itself is always watched.", valueName: "name"))
    var follow: [String] = []

    @Option(help: ArgumentHelp("Write a JUnit XML file: one failing testcase per stall.", valueName: "file"))
    var junit: String?

    @Flag(help: "Preload libstallprobe.so into the command: exact event-loop boundaries from inside (epoll_wait, poll, select on the main thread).")
    var loopProbe = false

    @OptionGroup var watch: WatchOptions

    @Argument(parsing: .postTerminator, help: "The command to run.")
    var command: [String] = []

    func validate() throws {
        guard !command.isEmpty else { throw ValidationError("no command after --") }
        guard ["report", "fail"].contains(onStall) else { throw ValidationError("--on-stall: expected report or fail, got '\(onStall)'") }
    }

    func run() throws {
        var options = RunOptions()
        do {
            options.monitor = try watch.monitorOptions(defaultLaunchThreshold: .infinity)
            options.onStall = RunOptions.OnStall(rawValue: onStall) ?? .report
            options.timeout = try timeout.map {
                try durationOption($0, "timeout", minimum: .leastNonzeroMagnitude, examples: "10m, 90s")
            }
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
        do {
            let (status, summaries) = try runner.run()
            if let junit {
                do {
                    try JUnitReport.write(
                        JUnitReport.render(summaries: summaries, command: command, seconds: Date().timeIntervalSince(started)), to: junit)
                } catch {
                    FileHandleOutput.standardError("stallagent: warning: could not write \(junit): \(error.localizedDescription)\n")
                }
            }
            if GitHubActionsOutput.isActive {
                GitHubActionsOutput.emit(summaries: summaries, reportDirectory: options.monitor.reportDirectory, write: FileHandleOutput.standardOutput)
            }
            let stalls = summaries.flatMap(\.stalls)
            if !stalls.isEmpty || !runner.snapshotReports.isEmpty {
                FileHandleOutput.standardError(RunSummaryTable.render(summaries: summaries, snapshots: runner.snapshotReports, reportDirectory: options.monitor.reportDirectory) + "\n")
            }
            throw ExitCode(status)
        } catch let error as CommandRunner.RunError {
            FileHandleOutput.standardError("stallagent: \(error)\n")
            throw ExitCode(error.exitCode)
        } catch let error as StallAgentError {
            FileHandleOutput.standardError("stallagent: error: \(error)\n")
            throw ExitCode(RunExitCode.agentError)
        }
    }
}
