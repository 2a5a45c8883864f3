import Foundation
import Testing

@testable import StallCapture
@testable import StallReports
@testable import StallSymbols

@Suite struct StackTextRendererInlineTests {
    let frame = SymbolizedFrame(
        index: 1, address: 0x401234, stackPointer: 0x7ffc0000, module: "app", modulePath: "/usr/bin/app",
        buildId: "ab", moduleOffset: 0x1234, function: "process_requests", functionOffset: 59, approximate: false,
        file: "/src/app/debuginfo.c", line: 18,
        inlined: [InlinedFrame(function: "wait_for_input", file: "/src/app/debuginfo.c", line: 12)])

    @Test func inlinedFunctionsShareTheFrameNumberAndComeFirst() {
        let lines = StackTextRenderer.lines([frame])
        #expect(
            lines == [
                "0   app       0x0000000000401234 wait_for_input [inlined] (debuginfo.c:12)",
                "0   app       0x0000000000401234 process_requests + 59 (debuginfo.c:18)",
            ])
    }

    @Test func summaryNamesTheInlinedCode() {
        #expect(
            StackTextRenderer.summary(frame)
                == "process_requests + 0x3b (app) [wait_for_input inlined at debuginfo.c:12]")
    }

    @Test func inlinedFramesRoundTripThroughJSONAndAreOmittedWhenEmpty() throws {
        let data = try JSONEncoder().encode(frame)
        #expect(try JSONDecoder().decode(SymbolizedFrame.self, from: data) == frame)
        var plain = frame
        plain.inlined = []
        let text = String(decoding: try JSONEncoder().encode(plain), as: UTF8.self)
        #expect(!text.contains("inlined"))
    }
}
