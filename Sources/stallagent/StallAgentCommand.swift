import ArgumentParser
import StallHost
import StallProc
import StallWrapper

import StallCapture
import StallSymbols
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

            `stallagent --version` prints the version and the binary's build-id. Exit codes: 0 success; 3 no such process / it exited; 4 permission denied; \
            5 not traceable (zombie, kernel thread, already traced); 6 capture timed out; \
            64 bad arguments; 65 a report that does not parse (view); 66 no reports to read (view); \
            69 metrics address unusable (e.g. port in use); 73 report directory (or view's output) unusable; 78 bad configuration file; 1 other errors. Wrapping a command: \
            its own status whatever the value (128+N for signal N), 86 stalls with --on-stall \
            fail, 124 timeout, 125 agent error, 126 cannot execute, 127 not found.
            """,
        subcommands: [Watch.self, Run.self, Dump.self, Symbolicate.self, View.self, Top.self, Demo.self, GenerateManPage.self],
        defaultSubcommand: Watch.self
    )
}

extension StallAgentCommand {
    /// `stallagent --version`: the version, and the build the binary is (its ELF build-id), so a
    /// report or a bug can be matched to the exact binary. Read only when asked: parsing every
    /// other command line must not open the binary.
    static func versionText() -> String {
        // The file itself: the module reader refuses symbolic links, /proc/self/exe among them.
        let path = (try? ProcFS.readLink("/proc/self/exe", pid: getpid())) ?? "/proc/self/exe"
        let buildID = ElfImageCache.shared.image(atPath: path, displayPath: "stallagent")?.buildID
        return "stallagent \(AgentMetrics.version) (build-id \(buildID ?? "unknown"))"
    }

    static let subcommandNames: Set<String> = ["watch", "run", "dump", "symbolicate", "view", "top", "demo", "generate-man-page", "help"]

    /// `stallagent [options] -- COMMAND` means `stallagent run [options] -- COMMAND`.
    /// In that mode every error of the agent's own, usage errors included, exits 125 like
    /// timeout(1), so a wrapped test run can tell them from the command's own failures.
    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments == ["--version"] || arguments == ["version"] {
            FileHandleOutput.standardOutput(versionText() + "\n")
            Glibc.exit(0)
        }
        let wrapping: Bool
        if let separator = arguments.firstIndex(of: "--"),
            !subcommandNames.contains(arguments.first ?? ""), !arguments[..<separator].contains("--pid")
        {
            arguments.insert("run", at: 0)
            wrapping = true
        } else {
            wrapping = arguments.first == "run"
        }
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
        } catch let end as WrappedCommandExit {
            fflush(nil)
            if let sig = end.dieOfSignal { ForwardedSignals.die(of: sig) }
            Glibc.exit(end.status)
        } catch {
            let code = exitCode(for: error)
            if wrapping, code.rawValue == 64 || code.rawValue == 1 {
                FileHandleOutput.standardError(fullMessage(for: error) + "\n")
                Glibc.exit(125)
            }
            exit(withError: error)
        }
    }
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
