import ArgumentParser
import StallHost

/// `stallagent generate-man-page`: stallagent(1) in troff, from the same help text as
/// `--help`, so the installed manual cannot drift from the program (scripts/install runs it).
struct GenerateManPage: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate-man-page", abstract: "Print the stallagent(1) manual page (troff).",
        shouldDisplay: false)

    func run() {
        var page = """
            .TH STALLAGENT 1 "" "stallagent \(AgentMetrics.version)" "User Commands"
            .SH NAME
            stallagent \\- watch a process's main thread from outside and report where it stalls
            .SH SYNOPSIS
            .B stallagent
            [\\fIoptions\\fR] \\fB\\-\\-pid\\fR \\fIPID\\fR | \\fB\\-\\-unit\\fR \\fINAME\\fR | \\fB\\-\\-pidfile\\fR \\fIFILE\\fR | \\fB\\-\\-config\\fR \\fIFILE\\fR
            .br
            .B stallagent
            [\\fIoptions\\fR] \\fB\\-\\-\\fR \\fICOMMAND\\fR [\\fIARGS\\fR...]
            .br
            .B stallagent dump
            \\fB\\-\\-pid\\fR \\fIPID\\fR
            .br
            .B stallagent view
            \\fIDIR\\fR [\\fB\\-o\\fR \\fIFILE\\fR] [\\fB\\-\\-format\\fR html|svg|speedscope|pprof]
            .br
            .B stallagent top
            \\fB\\-\\-pid\\fR \\fIPID\\fR...
            .br
            .B stallagent demo
            .SH DESCRIPTION

            """
        page += escape(StallAgentCommand.configuration.discussion) + "\n"
        let commands: [(String, ParsableCommand.Type)] = [
            ("watch (the default)", Watch.self), ("run (stallagent [options] \\-\\- COMMAND)", Run.self),
            ("dump", Dump.self), ("view", View.self), ("top", Top.self), ("demo", Demo.self),
        ]
        for (title, command) in commands {
            page += ".SH \"COMMAND: \(title.uppercased())\"\n.nf\n"
            page += escape(StallAgentCommand.helpMessage(for: command, columns: 100)) + "\n.fi\n"
        }
        page += """
            .SH FILES
            .TP
            .I /etc/stallagent/stallagent.yaml
            Targets and settings of the host agent (stallagent.service); see stallagent.yaml.example.
            .TP
            .I /var/lib/stallagent
            Reports, metrics and fingerprint state under systemd (StateDirectory=).
            .SH SEE ALSO
            .BR systemctl (1),
            .BR journalctl (1),
            .BR ptrace (2),
            .BR proc (5)

            """
        print(page, terminator: "")
    }

    /// troff: backslashes doubled, lines starting with '.' or '\'' protected.
    func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix(".") || line.hasPrefix("'") ? "\\&" + line : String(line)
        }.joined(separator: "\n")
    }
}
