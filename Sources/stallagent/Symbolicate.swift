import ArgumentParser
import Foundation
import StallProc
import StallCapture
import StallReports

struct Symbolicate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "symbolicate",
        abstract: "Fill in a report's function names, source lines and inlined frames from debug files.",
        discussion: """
            Reads a stall report's JSON (as written to --report-dir), finds each frame's module \
            by its build-id — under DIR/.build-id/xx/rest.debug, as DIR/<module name>, at the \
            module's original path, in /usr/lib/debug, or from the debuginfod servers in \
            $DEBUGINFOD_URLS — and rewrites the JSON and the text \
            report next to it (same name, .txt) atomically. Files whose build-id differs are \
            never used. Frames whose module is not found keep what the report had.

            Example: stallagent symbolicate reports/app_123_20261121-092239_hang_1.json \
            --debug-dir ./debug-files
            """)

    @Argument(help: ArgumentHelp("The report's .json file.", valueName: "report.json"))
    var report: String

    @Option(name: .customLong("debug-dir"), help: ArgumentHelp("A directory of debug files or unstripped binaries (repeatable).", valueName: "dir"))
    var debugDirectories: [String] = []

    func run() throws {
        try runReportingErrors {
            for directory in debugDirectories {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue
                else { throw StallAgentError.invalidArgument("--debug-dir \(directory): no such directory") }
            }
            Debuginfod.shared.notice = { FileHandleOutput.standardError("stallagent: \($0)\n") }
            let result = try ReportSymbolicator(debugDirectories: debugDirectories, debuginfod: .wait)
                .symbolicateFile(atPath: report)
            FileHandleOutput.standardOutput(
                "symbolicated \(result.symbolicated) of \(result.frames) frames; wrote \(result.jsonPath) and \(result.textPath)\n")
        }
    }
}
