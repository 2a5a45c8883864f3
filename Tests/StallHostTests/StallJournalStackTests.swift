import Testing

@testable import StallCapture
@testable import StallHost
@testable import StallSymbols

/// Issue 30: the folded stack a journal entry carries stays one bounded line.
@Suite struct StallJournalStackTests {
    static func frame(_ name: String) -> SymbolizedFrame {
        SymbolizedFrame(
            index: 0, address: 0, stackPointer: 0, module: "app", modulePath: nil, buildId: nil, moduleOffset: nil,
            function: name, functionOffset: 0, approximate: false)
    }

    @Test func rootFirstJoinedBySemicolons() {
        let frames = ["clock_nanosleep", "run_sleep", "on_tick", "main"].map(Self.frame)
        #expect(StallJournalEntry.folded(frames) == "main;on_tick;run_sleep;clock_nanosleep")
        #expect(StallJournalEntry.folded([]) == nil)
    }

    /// A deep stack is cut at the root end: the frames nearest the stall are what a reader needs.
    @Test func aDeepStackKeepsItsInnermostFrames() throws {
        let frames = (0..<500).map { Self.frame("recurse_\($0)") }
        let text = try #require(StallJournalEntry.folded(frames))
        #expect(text.utf8.count <= StallJournalEntry.stackLimit)
        #expect(text.hasPrefix("…;"))
        #expect(text.hasSuffix(";recurse_1;recurse_0"))
        // A name with ';' or a newline cannot break the format.
        #expect(StallJournalEntry.folded([Self.frame("a;b\nc")])?.contains(";") == false)
    }
}
