import Foundation
import Testing

@testable import StallReports
@testable import StallViews

@Suite("The HTML stall page")
struct HTMLReportRendererTests {
    func page(_ reports: [StallReport]) throws -> String {
        let collection = ReportCollection(source: "/reports", reports: reports.map { LoadedReport(report: $0, jsonPath: "/reports/x.json") })
        return String(decoding: try HTMLReportRenderer.render(collection, generator: "stallagent test"), as: UTF8.self)
    }

    /// The blob between `<script type="application/json" id="stall-data">` and `</script>`.
    func blob(_ html: String) throws -> String {
        let start = try #require(html.range(of: "<script type=\"application/json\" id=\"stall-data\">"))
        let end = try #require(html.range(of: "</script>", range: start.upperBound..<html.endIndex))
        return String(html[start.upperBound..<end.lowerBound])
    }

    @Test func selfContainedWithOneDataBlobThePageParses() throws {
        let html = try page(ViewFixtures.reports().map(\.report))
        #expect(!html.contains("http://") && !html.contains("https://") && !html.contains("src="))
        let object = try JSONSerialization.jsonObject(with: Data(try blob(html).utf8)) as? [String: Any]
        let stalls = try #require(object?["stalls"] as? [[String: Any]])
        #expect(stalls.map { $0["code"] as? String } == ["0x8badf00d", "0xdead10cc"])
        #expect(stalls.map { $0["culprit"] as? String } == ["leafB", "lock_contention"])
        let strings = try #require(object?["strings"] as? [String])
        // Each stall's details are JSON of their own, parsed when the stall is shown.
        let details = try stalls.map { stall in
            try #require(try JSONSerialization.jsonObject(with: Data((stall["detail"] as? String ?? "").utf8)) as? [String: Any])
        }
        // The call tree travels flat: (function, module, count, self, children) per node.
        let tree = try #require(details[0]["tree"] as? [Int])
        #expect(strings[tree[0]] == "(root)" && tree[2] == 30)
        let lock = try #require(details[1]["lockOwner"] as? [String: Any])
        #expect(lock["tid"] as? Int == 1235)
        let prints = try #require(object?["fingerprints"] as? [[String: Any]])
        #expect(prints.count == 2)
    }

    @Test func targetStringsCannotEndTheScriptOrBecomeMarkup() throws {
        let hostile = ViewFixtures.hostile()
        let html = try page([hostile])
        let data = try blob(html)
        // Inside the blob no '<' at all: nothing can close the element or open a comment.
        #expect(!data.contains("<") && !data.contains(">") && !data.contains("&"))
        #expect(data.contains("\\u003cscript\\u003e"))
        // The page's own four elements and no others.
        #expect(html.components(separatedBy: "<script").count - 1 == 3)
        #expect(html.components(separatedBy: "</script>").count - 1 == 3)
        #expect(!html.contains("<img"))
        // The title is escaped text.
        #expect(html.contains("<title>Stalls · &lt;script&gt; [1234]</title>"))
        // And the names come back intact when the page parses the blob.
        let object = try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any]
        let targets = try #require(object?["targets"] as? [[String: Any]])
        #expect(targets[0]["name"] as? String == "<script>")
        #expect(targets[0]["argv"] as? [String] == hostile.process.commandLine)
        #expect((object?["strings"] as? [String])?.contains("</script><img src=x onerror=alert(2)>") == true)
    }

    @Test func theScriptNeverWritesMarkupFromData() {
        for script in [ViewPageScript.main, ViewPageScript.errorCatcher, FlameGraphSVGScript.source] {
            #expect(!script.contains("innerHTML") && !script.contains("outerHTML") && !script.contains("insertAdjacentHTML"))
            #expect(!script.contains("document.write") && !script.contains("eval("))
        }
    }
}
