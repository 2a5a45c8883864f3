import Foundation
import StallProc

/// `--junit FILE`: one failing testcase per stall (the reason code as the failure type, the
/// report's text as its body), one per process captured when `--timeout` expired (type
/// `timeout`, the snapshot report with its stack as the body), or one passing testcase when
/// the run had nothing to report — so CI systems that read JUnit show stalls and hung runs
/// next to the test results.
public enum JUnitReport {
    struct Case {
        var classname: String
        var name: String
        var time: Double
        var failure: (type: String, message: String, body: String)?
    }

    public static func render(outcome: RunOutcome, command: [String], seconds: Double) -> String {
        var cases: [Case] = []
        for summary in outcome.summaries {
            for stall in summary.stalls {
                let name =
                    "\(summary.name)[\(summary.pid)] stall #\(stall.id) \(stall.reason.name) in \(stall.topFunction)"
                    + (stall.terminated ? " (terminated)" : "")
                let message =
                    "\(stall.reason.hexCode) \(stall.reason.name): main thread of \(summary.name)[\(summary.pid)] stalled \(String(format: "%.2f", stall.duration)) s in \(stall.topFunction)"
                    + (stall.terminated ? " (terminated by --kill-after)" : "")
                let body =
                    stall.reportPath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }
                    ?? "same stall as an earlier one (seen \(stall.occurrence)×); report not rewritten"
                cases.append(
                    Case(
                        classname: "stallagent.\(summary.name)", name: name, time: stall.duration,
                        failure: (stall.reason.hexCode, message, body)))
            }
        }
        if let timeout = outcome.expiredTimeout {
            let limit = String(format: "%.2f", timeout)
            for snapshot in outcome.snapshots {
                let message = "--timeout \(limit) s expired: main thread of \(snapshot.name)[\(snapshot.pid)] \(snapshot.activity) in \(snapshot.topFunction)"
                let body =
                    snapshot.reportPath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }
                    ?? "the snapshot report could not be written; see the agent's warnings"
                cases.append(
                    Case(
                        classname: "stallagent.\(snapshot.name)",
                        name: "\(snapshot.name)[\(snapshot.pid)] timed out after \(limit) s in \(snapshot.topFunction)",
                        time: seconds, failure: ("timeout", message, body)))
            }
            if outcome.snapshots.isEmpty {
                cases.append(
                    Case(
                        classname: "stallagent", name: "\(command.first ?? "command") timed out after \(limit) s",
                        time: seconds, failure: ("timeout", "--timeout \(limit) s expired", "no watched process could be captured")))
            }
        }
        if cases.isEmpty {
            cases.append(Case(classname: "stallagent", name: "no main-thread stalls", time: seconds, failure: nil))
        }
        let failures = cases.filter { $0.failure != nil }.count
        let time = String(format: "%.3f", seconds)
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuites name=\"stallagent\" tests=\"\(cases.count)\" failures=\"\(failures)\" time=\"\(time)\">\n"
        xml +=
            "  <testsuite name=\"stallagent: main-thread stalls\" tests=\"\(cases.count)\" failures=\"\(failures)\" errors=\"0\" skipped=\"0\" time=\"\(time)\">\n"
        xml +=
            "    <properties><property name=\"command\" value=\"\(escape(command.joined(separator: " ")))\"/>"
            + "<property name=\"exit-status\" value=\"\(outcome.status)\"/></properties>\n"
        for item in cases {
            let open = "    <testcase classname=\"\(escape(item.classname))\" name=\"\(escape(item.name))\" time=\"\(String(format: "%.3f", item.time))\""
            guard let failure = item.failure else {
                xml += open + "/>\n"
                continue
            }
            xml += open + ">\n"
            xml += "      <failure type=\"\(escape(failure.type))\" message=\"\(escape(failure.message))\">\(escape(failure.body))</failure>\n"
            xml += "    </testcase>\n"
        }
        xml += "  </testsuite>\n</testsuites>\n"
        return xml
    }

    /// XML text and attribute escaping; characters XML 1.0 cannot carry are dropped.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\n": out += "&#10;"
            case "\r": out += "&#13;"
            case "\t": out += "&#9;"
            default:
                if scalar.value < 0x20 || (0xFFFE...0xFFFF).contains(scalar.value) { continue }
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Checks, before the command starts, that `write(_:to:)` will be able to put a file at
    /// `path`: its directory exists and takes new files (the atomic write creates a temp file
    /// beside it and renames it), and `path` is not a directory. Throws a message that says why.
    public static func checkWritable(_ path: String) throws {
        let url = URL(fileURLWithPath: path)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw StallAgentError.invalidArgument("--junit \(path): is a directory")
        }
        let directory = url.deletingLastPathComponent().path
        let probe = directory + "/.stallagent-junit-\(getpid()).tmp"
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw StallAgentError.invalidArgument("--junit \(path): cannot create files in \(directory): \(reason)")
        }
        close(fd)
        unlink(probe)
    }

    /// Writes atomically (temp file + rename) so a CI job never reads half a file.
    public static func write(_ xml: String, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        try Data(xml.utf8).write(to: url, options: .atomic)
    }
}
