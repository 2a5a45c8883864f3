import CTestSupport
import Foundation
import Testing
@testable import StallProc
@testable import StallHost

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

    /// An entry bigger than a datagram can carry travels as a sealed memfd, as journald expects.
    @Test func aHugeEntryGoesInASealedMemfd() throws {
        let receiver = try DatagramReceiver()
        let journal = try JournalWriter(socketPath: receiver.path)
        let huge = String(repeating: "frame\n", count: 3_000_000)  // 18 MB: over any datagram limit
        try journal.send([("MESSAGE", huge), ("PRIORITY", "4")])
        var poller = pollfd(fd: receiver.fd, events: Int16(POLLIN), revents: 0)
        #expect(poll(&poller, 1, 2000) == 1)
        var buffer = [UInt8](repeating: 0, count: 64)
        var passed: Int32 = -1
        let n = buffer.withUnsafeMutableBytes { sa_recv_with_fd(receiver.fd, $0.baseAddress, $0.count, &passed) }
        #expect(n == 0)
        try #require(passed >= 0)
        defer { close(passed) }
        // F_GET_SEALS (1034) and F_SEAL_SHRINK | GROW | WRITE (2 | 4 | 8): macros Swift does not import.
        let seals = fcntl(passed, 1034)
        #expect(seals & 0xE == 0xE)
        var info = stat()
        fstat(passed, &info)
        let bytes = try #require(mmap(nil, Int(info.st_size), PROT_READ, MAP_PRIVATE, passed, 0))
        defer { munmap(bytes, Int(info.st_size)) }
        let fields = try #require(JournalWriter.decode(Array(UnsafeRawBufferPointer(start: bytes, count: Int(info.st_size)))))
        #expect(fields.first?.1.count == huge.utf8.count)
        #expect(fields.last?.1 == "4")
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
