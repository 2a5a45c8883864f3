import ArgumentParser
import Foundation
import StallProc
import StallMonitoring

#if canImport(Glibc)
import Glibc
#endif

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Watch a bundled program that stalls in each classic way, live (about 25 s).",
        discussion: """
            Starts the bundled stall-fixtures event loop, which stalls on CPU, in sleep, on a \
            mutex, on a pipe, in disk I/O, starved of CPU, then serves a burst of short events \
            (not a stall) — and watches it exactly as `stallagent --pid` would.
            """)

    @Option(help: ArgumentHelp("Where reports are written.", valueName: "dir"))
    var reportDir = "stallagent-reports/demo"

    @Option(help: ArgumentHelp("Path to stall-fixtures (default: next to this binary).", valueName: "path"))
    var fixtures: String?

    func run() throws {
        try runReportingErrors {
            // First: every thread the agent starts must inherit the mask.
            try StopRequest.install()
            let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            let fixturesPath = fixtures ?? me.deletingLastPathComponent().appendingPathComponent("stall-fixtures").path
            guard FileManager.default.isExecutableFile(atPath: fixturesPath) else {
                throw StallAgentError.invalidArgument("demo: the bundled stall-fixtures program is missing at \(fixturesPath); build it with `swift build`")
            }
            let script = "spin:1.5,sleep:1.2,mutex:1.2,pipe:1.2,io:1.2,starve:1.5,short:1.5"
            let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
            // A group of its own: Ctrl-C stops the watch, which then ends the fixture; the
            // fixture dying of it first would end a stall in progress as "died".
            let process = try ChildProcess.spawn(
                fixturesPath, ["loop", "--script", script, "--gap", "1", "--exit-when-done"], stdout: null, newGroup: true)
            if null >= 0 { close(null) }
            defer {
                // Gone already when it finished its script: then only reaped.
                Glibc.kill(process.pid, SIGKILL)
                process.wait()
            }
            FileHandleOutput.standardError(
                """
                stallagent demo: started stall-fixtures [\(process.pid)], an event loop that will stall:
                  1.5 s on CPU (busy_compute)        → 0x8badf00d hang
                  1.2 s in nanosleep (blocking_sleep) → 0xbaadca11 blocked
                  1.2 s on a mutex (lock_contention)  → 0xdead10cc lock, owner thread named
                  1.2 s reading a pipe (wait_on_pipe) → 0xbaadca11 blocked
                  1.2 s of write+fsync (disk_io)      → 0xd15cb10c io
                  1.5 s starved of CPU by 3 hogs      → 0xc00010ff starved
                  1.5 s of 3 ms events                → no report (the loop keeps turning)

                """)
            usleep(100_000)
            var options = MonitorOptions()
            options.reportDirectory = reportDir
            let monitor = try StallMonitor(pid: process.pid, options: options, log: { FileHandleOutput.standardError($0 + "\n") })
            let summary = watchAndSummarize(monitor)
            if let first = summary.stalls.compactMap(\.reportPath).first {
                FileHandleOutput.standardError("\nRead one: less \(first)   (JSON beside it; folded stacks for flamegraph.pl)\n")
            }
        }
    }
}
