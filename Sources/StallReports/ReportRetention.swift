import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Keeps a report directory within limits: at most `maxReports` reports, `maxBytes` bytes and
/// `maxAge` seconds of age. A report is the group of files sharing a stem (`.txt`, `.json`,
/// `.folded`); groups go whole, oldest first (by their newest file's modification time), so
/// no report is ever left half deleted. Only names the writer produces are touched: other
/// files an operator keeps there are neither counted nor removed.
public struct ReportRetention: Sendable, Equatable {
    public var maxReports: Int?
    public var maxBytes: Int64?
    public var maxAge: Double?

    public init(maxReports: Int? = nil, maxBytes: Int64? = nil, maxAge: Double? = nil) {
        self.maxReports = maxReports
        self.maxBytes = maxBytes
        self.maxAge = maxAge
    }

    public var isUnlimited: Bool { maxReports == nil && maxBytes == nil && maxAge == nil }

    public struct Outcome: Equatable, Sendable {
        public var removedReports = 0
        public var removedBytes: Int64 = 0
        public var keptReports = 0
        public var keptBytes: Int64 = 0
    }

    static let extensions = [".txt", ".json", ".folded"]

    /// Applies the limits now. `protected` stems (reports of stalls still open) are kept even
    /// past a limit: the writer would only recreate them on the next update.
    @discardableResult
    public func apply(to directory: String, now: Double = Date().timeIntervalSince1970, protected: Set<String> = []) -> Outcome {
        var outcome = Outcome()
        guard !isUnlimited, let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else {
            return outcome
        }
        var groups: [String: (newest: Double, bytes: Int64, files: [String])] = [:]
        for name in names where !name.hasPrefix(".") {
            guard let ext = Self.extensions.first(where: { name.hasSuffix($0) }) else { continue }
            let stem = String(name.dropLast(ext.count))
            // The writer's stems: name_pid_yyyyMMdd-HHmmss_reason_id.
            guard stem.split(separator: "_").count >= 5 else { continue }
            var info = stat()
            let path = directory + "/" + name
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
            var group = groups[stem] ?? (0, 0, [])
            group.newest = max(group.newest, modified)
            group.bytes += Int64(info.st_size)
            group.files.append(path)
            groups[stem] = group
        }
        // Newest first: what survives is a prefix of this order.
        let ordered = groups.sorted { $0.value.newest != $1.value.newest ? $0.value.newest > $1.value.newest : $0.key > $1.key }
        var keptCount = 0
        var keptBytes: Int64 = 0
        for (stem, group) in ordered {
            let tooOld = maxAge.map { now - group.newest > $0 } ?? false
            let tooMany = maxReports.map { keptCount + 1 > $0 } ?? false
            let tooBig = maxBytes.map { keptBytes + group.bytes > $0 } ?? false
            if protected.contains(stem) || !(tooOld || tooMany || tooBig) {
                keptCount += 1
                keptBytes += group.bytes
                continue
            }
            for file in group.files { unlink(file) }
            outcome.removedReports += 1
            outcome.removedBytes += group.bytes
        }
        outcome.keptReports = keptCount
        outcome.keptBytes = keptBytes
        return outcome
    }
}
