import Foundation
import StallReports
import Synchronization

/// One report read back from a report directory, with the folded stacks written beside it.
public struct LoadedReport: Sendable {
    public var report: StallReport
    public var jsonPath: String
    public var folded: String?

    public init(report: StallReport, jsonPath: String, folded: String? = nil) {
        self.report = report
        self.jsonPath = jsonPath
        self.folded = folded
    }
}

/// The reports of a directory (as `--report-dir` leaves it, or the service's directory with a
/// subdirectory per unit) or of one report file, in time order.
public struct ReportCollection: Sendable {
    public var source: String
    public var reports: [LoadedReport]
    /// The loops' health over time (`*.loop.jsonl`), when the directory records it.
    public var health: [LoopHealthSample]
    /// Lines of `*.loop.jsonl` files that did not parse (a line cut by a crash): skipped.
    public var unreadableHealthLines: Int

    public init(source: String, reports: [LoadedReport], health: [LoopHealthSample] = [], unreadableHealthLines: Int = 0) {
        self.source = source
        self.health = health.sorted { $0.time < $1.time }
        self.unreadableHealthLines = unreadableHealthLines
        self.reports = reports.sorted { lhs, rhs in
            let (left, right) = (lhs.report.span.startTime, rhs.report.span.startTime)
            return left != right ? left < right : lhs.jsonPath < rhs.jsonPath
        }
    }

    /// Reads `path`: a report's `.json`, or a directory whose `.json` files (and those of its
    /// subdirectories, two levels down: the service writes one per unit, and reports gathered
    /// from many hosts sit in one directory per host, docs/fleet.md) are all reports.
    /// Files starting with "." are a writer's temporary files and are skipped, and so are
    /// `view`'s own speedscope files (`*.speedscope.json`).
    public static func load(_ path: String) throws -> ReportCollection {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { throw ViewError.noSuchInput(path: path) }
        let files = isDirectory.boolValue ? jsonFiles(in: path, depth: searchDepth) : [path]
        let healthFiles = isDirectory.boolValue ? jsonFiles(in: path, depth: searchDepth, suffix: ".loop.jsonl") : []
        guard !files.isEmpty else { throw ViewError.noReports(path: path) }
        // Thousands of reports decode in parallel: JSONDecoder is most of the time spent.
        let results = ParallelResults<Result<LoadedReport, ViewError>>(count: files.count)
        DispatchQueue.concurrentPerform(iterations: files.count) { index in
            results[index] = Result { try read(files[index]) }.mapError { $0 as? ViewError ?? .corruptReport(path: files[index], reason: "\($0)") }
        }
        var reports: [LoadedReport] = []
        reports.reserveCapacity(files.count)
        for result in results.values {
            reports.append(try result!.get())
        }
        var health: [LoopHealthSample] = []
        var unreadable = 0
        let decoder = JSONDecoder()
        for file in healthFiles {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") where !line.isEmpty {
                if let sample = try? decoder.decode(LoopHealthSample.self, from: Data(line.utf8)) {
                    health.append(sample)
                } else {
                    unreadable += 1
                }
            }
        }
        return ReportCollection(source: path, reports: reports, health: health, unreadableHealthLines: unreadable)
    }

    /// HOST/UNIT/ under a gathered directory.
    public static let searchDepth = 2

    public static func jsonFiles(in directory: String, depth: Int, suffix: String = ".json") -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var files: [String] = []
        for name in names.sorted() where !name.hasPrefix(".") {
            let path = directory == "/" ? "/" + name : directory + "/" + name
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue {
                if depth > 0 { files += jsonFiles(in: path, depth: depth - 1, suffix: suffix) }
            } else if name.hasSuffix(suffix) && !name.hasSuffix(".speedscope.json") {
                files.append(path)
            }
        }
        return files
    }

    static func read(_ path: String) throws -> LoadedReport {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ViewError.corruptReport(path: path, reason: "cannot read it: \(error.localizedDescription)")
        }
        let report: StallReport
        do {
            report = try StallReportJSONRenderer.decode(data)
        } catch {
            throw ViewError.corruptReport(path: path, reason: describe(error))
        }
        let foldedPath = String(path.dropLast(".json".count)) + ".folded"
        let folded = try? String(contentsOfFile: foldedPath, encoding: .utf8)
        return LoadedReport(report: report, jsonPath: path, folded: folded)
    }

    /// Where the JSON went wrong, without the values Foundation would print.
    static func describe(_ error: any Error) -> String {
        func place(_ path: [any CodingKey]) -> String {
            path.isEmpty ? "the top level" : path.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            return "no \"\(key.stringValue)\" at \(place(context.codingPath))"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return "unexpected value at \(place(context.codingPath)): \(context.debugDescription.prefix(160))"
        case DecodingError.dataCorrupted(let context):
            let underlying = context.underlyingError.map { " (\(String(describing: $0).prefix(160)))" } ?? ""
            return "not valid JSON at \(place(context.codingPath)): \(context.debugDescription.prefix(160))\(underlying)"
        default:
            return String(String(describing: error).prefix(200))
        }
    }
}

/// Slots written by concurrentPerform's iterations, one each, read after it returns.
final class ParallelResults<Value: Sendable>: Sendable {
    private let storage: Mutex<[Value?]>

    init(count: Int) { storage = Mutex(Array(repeating: nil, count: count)) }

    subscript(index: Int) -> Value? {
        get { storage.withLock { $0[index] } }
        set { storage.withLock { $0[index] = newValue } }
    }

    var values: [Value?] { storage.withLock { $0 } }
}
