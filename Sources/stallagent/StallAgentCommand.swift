import ArgumentParser
import StallAgentKit

#if canImport(Glibc)
import Glibc
#endif

@main
struct StallAgentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stallagent",
        abstract: "Watch a process's main thread from outside and report where it stalls.",
        discussion: """
            stallagent attaches to a running Linux process without changing it, notices when its \
            main thread stops returning to its event loop, captures where it is stuck, and \
            writes watchdog-style reports with reason codes such as 0x8badf00d.

            Exit codes: 0 success; 3 no such process / it exited; 4 permission denied; \
            5 not traceable (zombie, kernel thread, already traced); 6 capture timed out; \
            64 bad arguments; 73 report directory unusable; 1 other errors.
            """,
        subcommands: [Watch.self, Dump.self, Demo.self, Bench.self],
        defaultSubcommand: Watch.self
    )
}

/// Runs `body`, turning the agent's errors into a message and their documented exit code.
func runReportingErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as StallAgentError {
        FileHandleOutput.standardError("stallagent: error: \(error)\n")
        throw ExitCode(error.exitCode)
    }
}
