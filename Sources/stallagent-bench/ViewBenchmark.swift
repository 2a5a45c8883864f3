import Foundation
import StallReports

#if canImport(Glibc)
import Glibc
#endif

/// Issue 29's figure: a report directory of 10 000 stalls (real reports of a watched fixture,
/// repeated over 8 processes, 40 fingerprints and three days) drawn by `stallagent view`, and
/// the page opened in Debian's headless chromium: the time from navigation to the page's own
/// "ready" mark (it parsed the data and drew the timeline, the tables and the latest stall).
struct ViewBenchmark {
    let fixtures: URL
    let agentBinary: URL

    func run(quick: Bool) throws {
        print("== view: 10 000 stalls (issue 29) ==")
        guard let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first(where: FileManager.default.isExecutableFile)
        else {
            print("view: chromium is not installed (scripts/setup installs it); skipped")
            return
        }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("view-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        let real = work.appendingPathComponent("real").path
        let fixture = try BenchmarkFixture(fixtures, ["loop", "--script", "spin:0.6,sleep:0.6,mutex:0.6", "--gap", "1", "--exit-when-done"])
        _ = try TimedChild.run(
            [
                agentBinary.path, "watch", "--pid", "\(fixture.pid)", "--threshold", "0.3s", "--launch-threshold", "0.3s", "--report-dir",
                real, "--quiet",
            ], pollMicros: 10_000)
        try fixture.finish()
        let reports = try FileManager.default.contentsOfDirectory(atPath: real).filter { $0.hasSuffix(".json") }.sorted()
            .map { try StallReportJSONRenderer.decode(Data(contentsOf: URL(fileURLWithPath: real + "/" + $0))) }
        guard !reports.isEmpty else {
            print("view: the fixture left no reports; skipped")
            return
        }
        let count = quick ? 2_000 : 10_000
        let many = work.appendingPathComponent("many").path
        let writer = try ReportWriter(directory: many, requireSafeOwner: false)
        let origin = Date().addingTimeInterval(-3 * 86_400)
        for index in 0..<count {
            var report = reports[index % reports.count]
            report.id = index + 1
            report.process.pid = Int32(1000 + index % 8)
            report.recurrence.fingerprint = "\(report.reason.name)-\(String(0xabc0 + index % 40, radix: 16))"
            report.recurrence.occurrence = 1 + index / 40
            report.span.startTime = origin.addingTimeInterval(Double(index) * 25 + Double(index % 7))
            report.span.endTime = report.span.startTime.addingTimeInterval(report.span.durationSeconds)
            _ = try writer.write(report, folded: nil)
        }
        let page = work.appendingPathComponent("stalls.html").path
        let view = try TimedChild.run([agentBinary.path, "view", many, "-o", page], pollMicros: 10_000)
        let size = (try? FileManager.default.attributesOfItem(atPath: page)[.size] as? Int) ?? 0
        var readies: [Double] = []
        for round in 0..<(quick ? 1 : 3) {
            let dom = work.appendingPathComponent("dom-\(round).html").path
            _ = try TimedChild.run(
                [
                    chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(work.path)/profile-\(round)",
                    "--dump-dom", URL(fileURLWithPath: page).absoluteString,
                ], stdout: dom, pollMicros: 10_000)
            let text = (try? String(contentsOfFile: dom, encoding: .utf8)) ?? ""
            if let range = text.range(of: " data-ready-ms=\""), let end = text[range.upperBound...].firstIndex(of: "\""),
                let value = Double(text[range.upperBound..<end])
            {
                readies.append(value)
            }
        }
        let ready = readies.isEmpty ? "?" : readies.map { String(format: "%.0f", $0) }.joined(separator: " / ")
        print(
            "view: \(count) stalls: stallagent view " + String(format: "%.2f s (page %.1f MB)", Double(view.wallNanos) / 1e9, Double(size) / 1e6)
                + "; chromium ready after navigation \(ready) ms (goal < 2000 ms)")
    }
}
