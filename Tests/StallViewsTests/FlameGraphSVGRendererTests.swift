import Foundation
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

@testable import StallReports
@testable import StallViews

@Suite("SVG flame graphs")
struct FlameGraphSVGRendererTests {
    final class Frames: NSObject, XMLParserDelegate {
        var titles: [String] = []
        var scripts = 0
        var inTitle = false

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if name == "title" {
                inTitle = true
                titles.append("")
            }
            if name == "script" { scripts += 1 }
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if name == "title" { inTitle = false }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if inTitle { titles[titles.count - 1] += string }
        }
    }

    func parse(_ svg: String) throws -> Frames {
        let parser = XMLParser(data: Data(svg.utf8))
        let frames = Frames()
        parser.delegate = frames
        #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
        return frames
    }

    @Test func oneFramePerCallTreeNodeWithItsSamples() throws {
        let reports = ViewFixtures.reports().map(\.report)
        let collection = ReportCollection(source: "/r", reports: reports.map { LoadedReport(report: $0, jsonPath: "x.json") })
        let frames = try parse(FlameGraphSVGRenderer.render(collection))
        let total = reports.map(\.callTree.count).reduce(0, +)
        #expect(frames.scripts == 1)
        // all stalls, then main ← work ← leafA/leafB and main ← lock_contention ← futex wait.
        #expect(frames.titles.count == 1 + 3 + 1 + 2)
        #expect(frames.titles[0].hasPrefix("all 2 stalls\n"))
        #expect(frames.titles.contains { $0.hasPrefix("leafB (app)\n20 samples") })
        #expect(frames.titles.contains { $0.hasPrefix("main (app)\n") && $0.contains("\n\(total) samples (100.00 %)") })
    }

    @Test func hostileNamesAreEscapedText() throws {
        let collection = ReportCollection(source: "/r", reports: [LoadedReport(report: ViewFixtures.hostile(), jsonPath: "x.json")])
        let svg = FlameGraphSVGRenderer.render(collection)
        let frames = try parse(svg)
        #expect(frames.scripts == 1)
        #expect(frames.titles.contains { $0.hasPrefix("</script><img src=x onerror=alert(2)> (app)\n") })
        #expect(!svg.contains("<img"))
        #expect(XMLText.escape("a\u{1}<b>&\"'") == "a\u{FFFD}&lt;b&gt;&amp;&quot;&#39;")
    }
}
