import ArgumentParser
import Foundation
import StallProc
import StallReports
import StallViews
import StallCapture
import StallSymbols

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

            Given a directory, every report in it and two levels down (a unit's directory, reports \
            gathered from many hosts in one directory per host) is symbolicated, each once; the \
            exit status is 65 if any of them could not be read or rewritten (each is named), 66 \
            if there is no report.

            Example: stallagent symbolicate reports/app_123_20261121-092239_hang_1.json \
            --debug-dir ./debug-files
            """)

    @Argument(help: ArgumentHelp("The report's .json file, or a directory of reports.", valueName: "report.json|dir"))
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
            let symbolicator = ReportSymbolicator(debugDirectories: debugDirectories, debuginfod: .wait)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: report, isDirectory: &isDirectory), isDirectory.boolValue else {
                let result = try symbolicator.symbolicateFile(atPath: report)
                FileHandleOutput.standardOutput(
                    "symbolicated \(result.symbolicated) of \(result.frames) frames; wrote \(result.jsonPath) and \(result.textPath)\n")
                return
            }
            let files = ReportCollection.jsonFiles(in: report, depth: ReportCollection.searchDepth)
            guard !files.isEmpty else {
                FileHandleOutput.standardError("stallagent: error: \(report.terminalSafe): no reports (.json) in it or two levels down\n")
                throw ExitCode(66)
            }
            var (frames, symbolicated, failed) = (0, 0, 0)
            for file in files {
                do {
                    let result = try symbolicator.symbolicateFile(atPath: file)
                    frames += result.frames
                    symbolicated += result.symbolicated
                } catch {
                    failed += 1
                    FileHandleOutput.standardError("stallagent: \(file.terminalSafe): \(error)\n")
                }
            }
            FileHandleOutput.standardOutput(
                "symbolicated \(symbolicated) of \(frames) frames in \(files.count - failed) of \(files.count) reports under \(report)\n")
            if failed > 0 { throw ExitCode(65) }
        }
    }
}
