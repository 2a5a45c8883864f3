import ReportTestSupport
import Foundation
import Testing

@testable import StallReports

@Suite("StallReport JSON rendering")
struct StallReportJSONRendererTests {
    private typealias F = ReportFixtures

    static let requiredKeys: Set<String> = [
        "schemaVersion", "kind", "id", "revision", "trigger", "reason", "cause", "phase", "deadlock", "process",
        "thread", "hostname", "startTime", "endTime", "ongoing", "ending", "durationSeconds", "thresholdSeconds",
        "samples", "stateBreakdown", "stallFrame", "heaviestStack", "callTree", "lockOwner", "binaryImages", "agent",
        "termination", "fingerprint", "occurrence", "description", "loopTurns", "loopTurnsNote",
    ]

    private func object(_ report: StallReport) throws -> [String: Any] {
        let data = try StallReportJSONRenderer.render(report)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func everyKeyIsPresentEvenWhenUnknown() throws {
        let json = try object(StallReport(snapshot: F.hangStarted(), context: F.context()))
        #expect(Set(json.keys) == Self.requiredKeys)
        #expect(json["lockOwner"] is NSNull)
        #expect(json["ending"] is NSNull)
        #expect(json["termination"] is NSNull)
        #expect(json["ongoing"] as? Bool == true)
    }

    @Test func fieldsAreTypedAsDocumented() throws {
        let report = StallReport(snapshot: F.lockEnded(), context: F.context(lockOwner: F.holder))
        let json = try object(report)
        #expect(json["schemaVersion"] as? Int == 1)
        #expect(json["kind"] as? String == "stall")
        let reason = try #require(json["reason"] as? [String: Any])
        #expect(reason["code"] as? String == "0xdead10cc")
        #expect(reason["name"] as? String == "lock")
        #expect((json["cause"] as? [String: Any])?["name"] as? String == "lock")
        #expect(json["phase"] as? String == "loop")
        #expect(json["ending"] as? String == "returnedToIdle")
        let process = try #require(json["process"] as? [String: Any])
        #expect(process["pid"] as? Int == 1234)
        #expect(process["path"] as? String == "/opt/app/bin/app")
        #expect(process["buildId"] as? String == "9f1cabcdef")
        #expect((json["thread"] as? [String: Any])?["name"] as? String == "main")
        let iso = #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}([+-]\d\d:\d\d|Z)$/#
        #expect((json["startTime"] as? String)?.wholeMatch(of: iso) != nil)
        #expect((json["endTime"] as? String)?.wholeMatch(of: iso) != nil)
        #expect(json["durationSeconds"] as? Double == 1.3)
        #expect(json["thresholdSeconds"] as? Double == 1)
        let samples = try #require(json["samples"] as? [String: Any])
        #expect(Set(samples.keys) == ["count", "intervalSeconds", "sampledSeconds", "dropped"])
        let breakdown = try #require(json["stateBreakdown"] as? [String: Any])
        let lockWait = try #require(breakdown["lockWait"] as? [String: Any])
        #expect(lockWait["fraction"] as? Double == 1)
        #expect(lockWait["seconds"] as? Double == 1.3)
        let stallFrame = try #require(json["stallFrame"] as? [String: Any])
        #expect(stallFrame["address"] as? String == "0x7f0000002000")
        #expect(stallFrame["moduleOffset"] as? String == "0x2000")
        #expect(stallFrame["buildId"] as? String == "c0ffee")
        let heaviest = try #require(json["heaviestStack"] as? [String: Any])
        #expect(heaviest["samples"] as? Int == 26)
        #expect(heaviest["totalSamples"] as? Int == 26)
        let frames = try #require(heaviest["frames"] as? [[String: Any]])
        #expect(frames.map { $0["function"] as? String } == ["__futex_abstimed_wait_common", "lock_contention", "main"])
        #expect(frames[1]["file"] as? String == "lock_contention.c")
        #expect(frames[1]["line"] as? Int == 101)
        let tree = try #require(json["callTree"] as? [String: Any])
        #expect(tree["function"] as? String == "(root)")
        #expect(tree["count"] as? Int == 26)
        #expect(((tree["children"] as? [[String: Any]])?.first)?["function"] as? String == "main")
        let owner = try #require(json["lockOwner"] as? [String: Any])
        #expect(owner["tid"] as? Int == 1235)
        #expect(owner["waitChain"] as? [Int] == [1234, 1235])
        #expect(owner["deadlock"] as? Bool == false)
        let images = try #require(json["binaryImages"] as? [[String: Any]])
        #expect(images.map { $0["start"] as? String } == ["0x400000", "0x7f0000000000"])
        let agent = try #require(json["agent"] as? [String: Any])
        #expect(agent["pauseP99Micros"] as? Double == 95)
        #expect(agent["capturesWithStop"] as? Int == 28)
        #expect(json["occurrence"] as? Int == 1)
        #expect((json["fingerprint"] as? String)?.hasPrefix("lock-") == true)
        #expect(json["description"] as? String == report.description)
    }

    @Test func prettySortedAndSlashesUnescaped() throws {
        let data = try StallReportJSONRenderer.render(StallReport(snapshot: F.hangEnded(), context: F.context()))
        let text = try #require(String(data: data, encoding: .utf8))
        #expect(!text.contains("\\/"))
        #expect(text.contains("\"/opt/app/bin/app\""))
        #expect(text.hasPrefix("{\n  \"agent\""))
        #expect(text.hasSuffix("}\n"))
    }

    @Test func decodesBackToTheSameReport() throws {
        var owner = F.holder
        owner.name = nil
        let report = StallReport(snapshot: F.lockEnded(), context: F.context(lockOwner: owner))
        let data = try StallReportJSONRenderer.render(report)
        let decoded = try StallReportJSONRenderer.decode(data)
        #expect(decoded.reason == report.reason)
        #expect(decoded.heaviestStack == report.heaviestStack)
        #expect(decoded.stallFrame == report.stallFrame)
        #expect(decoded.callTree == report.callTree)
        #expect(decoded.lockOwner == owner)
        #expect(decoded.binaryImages == report.binaryImages)
        #expect(decoded.stateBreakdown == report.stateBreakdown)
        #expect(decoded.process == report.process)
        #expect(abs(decoded.span.startTime.timeIntervalSince(report.span.startTime)) < 0.001)
        #expect(decoded.description == report.description)
        // Re-encoding what was read gives the same document.
        #expect(try StallReportJSONRenderer.render(decoded) == data)
    }
}
