import Foundation
import Testing

@testable import StallReports
@testable import StallViews

#if canImport(Glibc)
import Glibc
#endif

/// The page with 10 000 stalls (real reports repeated over eight processes and a few days,
/// with 40 fingerprints) opens without an error and keeps its tables short. The < 2 s figure
/// is scripts/bench's (`stallagent-bench --view-only`): this test runs in a lane beside
/// others and bounds the time only against a gross regression.
@Suite(.serialized) struct ViewScaleTests {
    @Test(.enabled(if: HeadlessChromium.url != nil, HeadlessChromium.missing))
    func tenThousandStallsOpenWithShortTables() throws {
        let directory = try ViewCommandTests.realReports.get()
        let real = try ReportCollection.load(directory).reports
        try #require(!real.isEmpty)
        var reports: [LoadedReport] = []
        let origin = Date(timeIntervalSince1970: 1_795_000_000)
        for index in 0..<10_000 {
            var copy = real[index % real.count]
            copy.report.id = index + 1
            copy.report.process.pid = Int32(1000 + index % 8)
            copy.report.recurrence.fingerprint = String(format: "%016lx", 0xabc0 + index % 40)
            copy.report.recurrence.occurrence = 1 + index / 40
            copy.report.span.startTime = origin.addingTimeInterval(Double(index) * 25 + Double(index % 7))
            copy.report.span.endTime = copy.report.span.startTime.addingTimeInterval(copy.report.span.durationSeconds)
            reports.append(copy)
        }
        let started = Date()
        let html = try HTMLReportRenderer.render(ReportCollection(source: "synthetic", reports: reports), generator: "stallagent test")
        let renderSeconds = Date().timeIntervalSince(started)
        let page = FileManager.default.temporaryDirectory.appendingPathComponent("view-10000-\(UUID().uuidString).html").path
        defer { unlink(page) }
        try html.write(to: URL(fileURLWithPath: page))
        let (dom, seconds, _) = try HeadlessChromium.dumpDOM(page)
        let ready = try #require(HeadlessChromium.attribute("data-ready-ms", in: dom).flatMap(Double.init))
        let script = try #require(HeadlessChromium.attribute("data-render-ms", in: dom).flatMap(Double.init))
        print(
            String(
                format:
                    "view: 10000 stalls, page %.1f MB written in %.2f s; in Chromium ready %.0f ms after navigation (script %.0f ms), browser start to DOM dump %.2f s",
                Double(html.count) / 1e6, renderSeconds, ready, script, seconds))
        #expect(HeadlessChromium.attribute("data-errors", in: dom) == nil)
        #expect(HeadlessChromium.attribute("data-stall-count", in: dom) == "10000")
        #expect(ready < 10_000)
        // The tables stay short until asked: 100 stall rows, not 10 000.
        #expect(dom.components(separatedBy: "data-stall=\"").count - 1 == 100)
    }
}
