import ArgumentParser
import Foundation
import StallHost
import StallViews

#if canImport(Glibc)
import Glibc
#endif

/// `stallagent view`: a report directory as a picture: an HTML page, an SVG flame graph, or a
/// profile that speedscope, pprof, Pyroscope and Parca open.
struct View: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "view",
        abstract: "Draw a report directory: an HTML page, a flame graph, or a speedscope or pprof profile.",
        discussion: """
            Reads every stall report (.json) in DIR and two levels down (the service's \
            directory per unit; reports gathered from many hosts, one directory per host), or \
            the one report file given, and writes one file:

              html        a self-contained page (no network): a timeline of every stall per \
            process coloured by reason, the selected stall's reason, culprit with file:line, \
            flame graph with search and zoom, heaviest stack, lock owner or deadlock cycle and \
            what the capture cost; a table of recurring stalls by fingerprint
              svg         an interactive flame graph of all the samples (click to zoom, search)
              speedscope  speedscope's JSON: one sampled profile per stall
              pprof       gzipped profile.proto for go tool pprof, Pyroscope, Parca: labels \
            target, reason, code and fingerprint on every sample

            The output goes to -o FILE (- for standard output), else to stalls.html, stalls.svg, \
            stalls.speedscope.json or stalls.pb.gz in the current directory.

            Exit codes: 0 written; 64 bad arguments; 65 a report that does not parse (named); \
            66 no such directory or file, or no reports in it; 73 the output cannot be written.

            Example: stallagent view /var/lib/stallagent/reports -o stalls.html
            """)

    @Argument(help: ArgumentHelp("A report directory (--report-dir) or one report's .json file.", valueName: "dir"))
    var input: String

    @Option(name: .shortAndLong, help: ArgumentHelp("Where to write (- for standard output).", valueName: "file"))
    var output: String?

    @Option(name: .customLong("format"), help: ArgumentHelp("html, svg, speedscope or pprof.", valueName: "format"))
    var formatName = ViewFormat.html.rawValue

    func validate() throws {
        guard ViewFormat(rawValue: formatName) != nil else {
            throw ValidationError("--format \(formatName): not one of \(ViewFormat.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    func run() throws {
        let format = ViewFormat(rawValue: formatName) ?? .html
        do {
            let collection = try ReportCollection.load(input)
            let data = try format.render(collection, generator: "stallagent \(AgentMetrics.version)", version: AgentMetrics.version)
            let destination = output ?? format.defaultFileName
            if destination == "-" {
                FileHandle.standardOutput.write(data)
                return
            }
            do {
                try data.write(to: URL(fileURLWithPath: destination), options: .atomic)
            } catch {
                throw ViewError.cannotWrite(path: destination, reason: (error as NSError).localizedDescription)
            }
            let stalls = collection.reports.count
            FileHandleOutput.standardError("stallagent: wrote \(destination) (\(format.rawValue), \(stalls) stall\(stalls == 1 ? "" : "s"))\n")
        } catch let error as ViewError {
            FileHandleOutput.standardError("stallagent: error: \(error)\n")
            throw ExitCode(error.exitCode)
        }
    }
}
