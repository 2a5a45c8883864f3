import Foundation
import Testing
@testable import StallAgentKit

#if canImport(Glibc)
import Glibc
#endif

@Suite struct JournalWriterTests {
    @Test func encodesPlainAndBinaryFieldsAndDecodesThemBack() throws {
        let fields = [("MESSAGE", "line one\nline two"), ("PRIORITY", "4"), ("STALLAGENT_REPORT", "/a b/c=d.txt"), ("EMPTY", "")]
        let bytes = JournalWriter.encode(fields)
        // The binary form for the multi-line value: KEY\n + 8-byte little-endian length.
        #expect(Array(bytes[0..<8]) == Array("MESSAGE\n".utf8))
        #expect(bytes[8] == 17 && bytes[9...15].allSatisfy { $0 == 0 })
        let decoded = try #require(JournalWriter.decode(bytes))
        #expect(decoded.map(\.0) == fields.map(\.0))
        #expect(decoded.map(\.1) == fields.map(\.1))
        #expect(JournalWriter.decode(Array(bytes.dropLast(3))) == nil)
    }

    @Test func sendsOneDatagramPerEntry() throws {
        let receiver = try DatagramReceiver()
        let journal = try JournalWriter(socketPath: receiver.path)
        try journal.send([("MESSAGE", "hello"), ("STALLAGENT_REASON_CODE", "0x8badf00d")])
        let datagram = try #require(receiver.receive(timeout: 2))
        let fields = try #require(JournalWriter.decode(datagram))
        #expect(fields.first { $0.0 == "STALLAGENT_REASON_CODE" }?.1 == "0x8badf00d")
    }

    @Test func aMissingSocketIsAnErrorAtStart() {
        #expect(throws: StallAgentError.self) { try JournalWriter(socketPath: "/nonexistent/journal/socket") }
    }

    @Test func journalStreamMustMatchStderr() {
        var info = stat()
        fstat(STDERR_FILENO, &info)
        #expect(JournalWriter.stderrIsJournal(environment: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)"]))
        #expect(!JournalWriter.stderrIsJournal(environment: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino &+ 1)"]))
        #expect(!JournalWriter.stderrIsJournal(environment: ["JOURNAL_STREAM": "garbage"]))
        #expect(!JournalWriter.stderrIsJournal(environment: [:]))
    }
}
