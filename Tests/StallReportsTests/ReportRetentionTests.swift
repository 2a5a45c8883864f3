import Foundation
import Testing
@testable import StallReports

#if canImport(Glibc)
import Glibc
#endif

@Suite struct ReportRetentionTests {
    /// A directory of `count` reports (txt + json), the i-th one `i` hours old, each 1000 bytes.
    func directory(reports count: Int, now: Double) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("retention-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for i in 0..<count {
            for ext in ["txt", "json"] {
                let path = "\(dir)/app_\(100 + i)_20261121-1000\(String(format: "%02d", i))_hang_1.\(ext)"
                _ = FileManager.default.createFile(atPath: path, contents: Data(repeating: 65, count: 500))
                let time = now - Double(i) * 3600
                var times = [timespec(tv_sec: Int(time), tv_nsec: 0), timespec(tv_sec: Int(time), tv_nsec: 0)]
                utimensat(AT_FDCWD, path, &times, 0)
            }
        }
        _ = FileManager.default.createFile(atPath: dir + "/notes.txt", contents: Data("mine".utf8))
        return dir
    }

    func stems(_ dir: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return Set(names.filter { $0.hasPrefix("app_") }.map { String($0.split(separator: ".")[0]) }).sorted()
    }

    @Test func countLimitKeepsTheNewestWholeReports() throws {
        let now = Date().timeIntervalSince1970
        let dir = try directory(reports: 10, now: now)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let outcome = ReportRetention(maxReports: 3).apply(to: dir, now: now)
        #expect(outcome.removedReports == 7 && outcome.keptReports == 3)
        #expect(stems(dir) == ["app_100_20261121-100000_hang_1", "app_101_20261121-100001_hang_1", "app_102_20261121-100002_hang_1"])
        let names = try FileManager.default.contentsOfDirectory(atPath: dir)
        #expect(names.count == 7)  // 3 × (txt + json) + notes.txt, which is not a report
        #expect(names.contains("notes.txt"))
    }

    @Test func byteAndAgeLimits() throws {
        let now = Date().timeIntervalSince1970
        let dir = try directory(reports: 10, now: now)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(ReportRetention(maxBytes: 4500).apply(to: dir, now: now).keptBytes <= 4500)
        #expect(stems(dir).count == 4)
        ReportRetention(maxAge: 2.5 * 3600).apply(to: dir, now: now)
        #expect(stems(dir).count == 3)
    }

    @Test func openReportsAreNeverRemoved() throws {
        let now = Date().timeIntervalSince1970
        let dir = try directory(reports: 5, now: now)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        ReportRetention(maxReports: 1).apply(to: dir, now: now, protected: ["app_104_20261121-100004_hang_1"])
        #expect(stems(dir) == ["app_100_20261121-100000_hang_1", "app_104_20261121-100004_hang_1"])
    }
}
