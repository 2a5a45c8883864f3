import ArgumentParser
import Foundation
import StallReports
import StallMonitoring
import StallCapture
import StallSymbols

struct Dump: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print where a process's main thread is right now (like eu-stack -p).",
        discussion: """
            Shows the main thread's state (running, idle in epoll_wait, blocked in a call, \
            waiting on a lock and its owner) and its symbolized stack, innermost frame first. \
            A blocked or idle thread is read without stopping it; a running thread is stopped \
            only while its registers and stack are copied (tens of microseconds).

            Example: stallagent dump --pid 1234 --all-threads
            """)

    @Option(name: .long, help: "The process to inspect.")
    var pid: Int32

    @Flag(name: .long, help: "Dump every thread, not just the main thread.")
    var allThreads = false

    @Flag(name: .long, help: "Print JSON (frame fields as in stall reports) instead of text.")
    var json = false

    @Option(name: Settings.maxStack.longName, parsing: .unconditional, help: Settings.maxStack.argumentHelp)
    var maxStack: SettingArgument<ByteSize>?

    @Option(name: .customLong("debug-dir"), help: ArgumentHelp("Also look for separate debug files here (repeatable).", valueName: "dir"))
    var debugDirectories: [String] = []

    @Flag(name: .long, help: "Show only native frames for a CPython process (no interpreter frames).")
    var noPythonFrames = false

    func validate() throws {
        _ = try Settings.maxStack.value(maxStack)
    }

    func run() throws {
        try runReportingErrors {
            var options = ThreadCapturer.Options()
            options.maxStackBytes = Int(try Settings.maxStack.value(maxStack)!.bytes)
            options.stopDeadlineNanos = 1_000_000_000
            Debuginfod.shared.notice = { FileHandleOutput.standardError("stallagent: \($0)\n") }
            let inspector = try ProcessInspector(
                pid: pid, capturer: ThreadCapturer(options: options), debugDirectories: debugDirectories,
                debuginfod: .wait, withExitedMainThread: allThreads)
            inspector.readsPythonFrames = !noPythonFrames
            let dump = try inspector.dumpProcess(allThreads: allThreads)
            for notice in InflationBudget.shared.drainNotices() { FileHandleOutput.standardError("stallagent: \(notice)\n") }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                let data = try encoder.encode(dump)
                FileHandleOutput.standardOutput(String(decoding: data, as: UTF8.self) + "\n")
            } else {
                FileHandleOutput.standardOutput(DumpTextRenderer.render(dump))
            }
        }
    }
}
