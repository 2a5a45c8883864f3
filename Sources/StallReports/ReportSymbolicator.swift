import Foundation
import StallDetection
import StallProc
import StallSymbols

/// `stallagent symbolicate`: re-reads a report's JSON, fills in every frame from debug files
/// found by build-id, and rewrites the JSON and its sibling text report atomically. The
/// fingerprint is kept (it must still match the live reports of the same stall).
public struct ReportSymbolicator {
    public struct Result: Equatable, Sendable {
        public var frames: Int
        public var symbolicated: Int
        public var jsonPath: String
        public var textPath: String
    }

    public let symbolicator: OfflineSymbolicator

    public init(debugDirectories: [String], debuginfod: DebuginfodUse = .off) {
        symbolicator = OfflineSymbolicator(debugDirectories: debugDirectories, debuginfod: debuginfod)
    }

    /// Updates the report in place; returns (frames seen, frames filled in).
    public func symbolicate(_ report: inout StallReport) -> (frames: Int, symbolicated: Int) {
        var frames = 0
        var filled = 0
        // Call-tree nodes keep only names; an unnamed one is "module+0xOFFSET", which can
        // be renamed from the same frame's new name.
        var renames: [String: String] = [:]
        func fix(_ frame: inout SymbolizedFrame) {
            frames += 1
            let old =
                frame.function
                ?? "\(frame.module ?? "?")+0x\(String(frame.moduleOffset ?? frame.address, radix: 16))"
            if symbolicator.symbolicate(&frame) {
                filled += 1
                if let name = frame.function, name != old { renames[old] = name }
            }
        }
        if var frame = report.stallFrame {
            fix(&frame)
            report.stallFrame = frame
        }
        if var stack = report.heaviestStack {
            for index in stack.frames.indices { fix(&stack.frames[index]) }
            report.heaviestStack = stack
        }
        if var owner = report.lockOwner {
            for index in owner.frames.indices { fix(&owner.frames[index]) }
            report.lockOwner = owner
        }
        if !renames.isEmpty { report.callTree = Self.rename(report.callTree, renames) }
        report.description = StallReportDescription.sentence(for: report)
        return (frames, filled)
    }

    static func rename(_ node: CallTreeNode, _ renames: [String: String]) -> CallTreeNode {
        var copy = node
        if let name = renames[node.function] { copy.function = name }
        copy.children = node.children.map { rename($0, renames) }
        return copy
    }

    static let maxReportBytes = 64 << 20

    /// Reads `jsonPath`, symbolicates, and writes it and `<stem>.txt` beside it.
    public func symbolicateFile(atPath jsonPath: String) throws -> Result {
        let data: Data
        // A report is a few megabytes at most; a 1 GiB file was read whole (issue 27).
        var info = stat()
        if stat(jsonPath, &info) == 0, info.st_size > Self.maxReportBytes {
            throw StallAgentError.invalidArgument(
                "\(jsonPath) is \(info.st_size >> 20) MiB: not a stallagent report (at most \(Self.maxReportBytes >> 20) MiB)")
        }
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: jsonPath))
        } catch {
            throw StallAgentError.invalidArgument("cannot read report \(jsonPath): \(error.localizedDescription)")
        }
        var report: StallReport
        do {
            report = try JSONDecoder().decode(StallReport.self, from: data)
        } catch {
            throw StallAgentError.invalidArgument("\(jsonPath) is not a stallagent report (JSON): \(error)")
        }
        let counts = symbolicate(&report)
        let url = URL(fileURLWithPath: jsonPath)
        let stem = url.deletingPathExtension().lastPathComponent
        let writer = try ReportWriter(directory: url.deletingLastPathComponent().path, requireSafeOwner: false)
        let paths = try writer.write(report, folded: nil, stem: stem)
        return Result(frames: counts.frames, symbolicated: counts.symbolicated, jsonPath: paths.json, textPath: paths.text)
    }
}
