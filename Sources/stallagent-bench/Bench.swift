import ArgumentParser
import CPosix
import Foundation
import StallProc

/// `stallagent-bench`: the performance figures, kept out of the production binary. It measures
/// the `stallagent` binary that sits next to it (or `--agent`).
@main
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stallagent-bench",
        abstract: "Measure capture costs against bundled fixture processes (used by scripts/bench).")

    @Option(help: "Path to the stallagent binary to measure (default: next to this binary).")
    var agent: String?

    @Option(help: "Path to the stall-fixtures binary (default: next to this binary).")
    var fixtures: String?

    @Option(help: "Captures per measurement.")
    var captures = 100

    @Flag(help: "Only the capture figures (issue: dump).")
    var captureOnly = false

    @Flag(help: "Only the watchdog figures (issue: --pid).")
    var monitorOnly = false

    @Flag(help: "Only the symbolization figures (cold/warm time and memory for a large module).")
    var symbolsOnly = false

    @Flag(help: "Only the wrapper figures (issue 13: `stallagent -- COMMAND` against COMMAND alone).")
    var wrapperOnly = false

    @Flag(help: "Only the scale figures (issue 23: a family of 1-200 idle processes, PostgreSQL with 150 connections idle and 50 busy, attach latency).")
    var scaleOnly = false

    @Flag(help: "Only the busy-family figure (issue 23: PostgreSQL under pgbench, one pg_sleep(2) to report).")
    var busyFamilyOnly = false

    @Flag(help: "Only the dump-vs-eu-stack and watch-RSS figures against Debian's Python, Redis, PostgreSQL, Node.js.")
    var dumpOnly = false

    @Flag(help: "Only the view figure (issue 29: 10 000 stalls drawn by `stallagent view`, opened in headless chromium).")
    var viewOnly = false

    @Flag(help: "Only the Python server figure (issue 26: aiohttp under ab -c 20, stops while healthy, stalls named).")
    var pythonServerOnly = false

    @Flag(help: "Only the system-call cost figures (issue 23: getppid in a loop, unwatched vs watched by each loop-turn evidence vs a bystander).")
    var syscallOnly = false

    @Flag(help: "Only Redis at saturation (issue 23: redis-benchmark -P 16 -c 50, unwatched vs each loop-turn evidence, 8 rounds).")
    var redisOnly = false

    @Flag(help: "Shorter runs.")
    var quick = false

    @Option(help: ArgumentHelp("Only the Python-frames figures, against this CPython 3.11+ interpreter.", valueName: "python"))
    var python: String?

    func run() throws {
        // Stopped by `timeout` or Ctrl-C, the bench takes its targets (fixtures, Python, Redis)
        // down with it instead of leaving them to disturb the next measurement.
        _ = sa_kill_children_on_termination()
        try runReportingErrors {
            let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            let fixturesURL =
                fixtures.map { URL(fileURLWithPath: $0) }
                ?? me.deletingLastPathComponent().appendingPathComponent("stall-fixtures")
            let agentBinary =
                agent.map { URL(fileURLWithPath: $0) }
                ?? me.deletingLastPathComponent().appendingPathComponent("stallagent")
            if let python {
                var bench = PythonCaptureBenchmark(python: python)
                bench.captures = quick ? 50 : captures * 2
                try bench.run()
                return
            }
            let pythonServer = PythonServerBenchmark.findPython(near: me).map {
                PythonServerBenchmark(python: $0, agentBinary: agentBinary)
            }
            if pythonServerOnly {
                guard let pythonServer else {
                    print("aiohttp under ab: skipped (scripts/setup installs aiohttp into .build/pyvenv)")
                    return
                }
                try pythonServer.run(quick: quick)
                return
            }
            if syscallOnly {
                try SyscallCostBenchmark(fixtures: fixturesURL, agentBinary: agentBinary).run(quick: quick)
                return
            }
            if redisOnly {
                try MonitorBenchmark(fixtures: fixturesURL, agentBinary: agentBinary).redisLoopTurnCost(rounds: quick ? 2 : 8)
                return
            }
            if wrapperOnly {
                try WrapperBenchmark(agentBinary: agentBinary).run(quick: quick)
                return
            }
            if busyFamilyOnly {
                try ScaleBenchmark(fixtures: fixturesURL, agentBinary: agentBinary).runBusyFamily(quick: quick)
                return
            }
            if scaleOnly {
                try ScaleBenchmark(fixtures: fixturesURL, agentBinary: agentBinary).run(quick: quick)
                return
            }
            if viewOnly {
                try ViewBenchmark(fixtures: fixturesURL, agentBinary: agentBinary).run(quick: quick)
                return
            }
            if dumpOnly {
                try DumpBenchmark(agentBinary: agentBinary).run(quick: quick)
                return
            }
            let benchmark = CaptureBenchmark(fixtures: fixturesURL, agentBinary: agentBinary)
            benchmark.captures = captures
            if !captureOnly && !monitorOnly {
                SymbolizationBenchmark().run()
                if symbolsOnly { return }
                print("")
            }
            if !monitorOnly { try benchmark.run() }
            if !captureOnly {
                print("")
                try MonitorBenchmark(fixtures: fixturesURL, agentBinary: agentBinary).run(quick: quick)
            }
            if !captureOnly && !monitorOnly {
                print("")
                try WrapperBenchmark(agentBinary: agentBinary).run(quick: quick)
                print("")
                try DumpBenchmark(agentBinary: agentBinary).run(quick: quick)
                print("")
                if let pythonServer {
                    try pythonServer.run(quick: quick)
                } else {
                    print("aiohttp under ab: skipped (scripts/setup installs aiohttp into .build/pyvenv)")
                }
                print("")
                try ScaleBenchmark(fixtures: fixturesURL, agentBinary: agentBinary).run(quick: quick)
                print("")
                try SyscallCostBenchmark(fixtures: fixturesURL, agentBinary: agentBinary).run(quick: quick)
                print("")
                try ViewBenchmark(fixtures: fixturesURL, agentBinary: agentBinary).run(quick: quick)
            }
        }
    }
}

/// Runs `body`, turning the agent's errors into a message and their documented exit code
/// (as `stallagent` does).
func runReportingErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as StallAgentError {
        FileHandle.standardError.write(Data("stallagent-bench: error: \(error)\n".utf8))
        throw ExitCode(error.exitCode)
    }
}
