import DetectionTestSupport
import Foundation
import Testing

@testable import StallDetection

@Suite("StallFingerprint and StallFingerprintBook")
struct StallFingerprintTests {
    private func frames(_ names: [String], addressBase: UInt64) -> [SampledFrame] {
        names.enumerated().map { index, name in
            SampledFrame(function: name, module: "app", address: addressBase + UInt64(index), cfa: addressBase * 2 + UInt64(index))
        }
    }

    @Test func ignoresAddressesAndIsStable() {
        let one = StallFingerprint.make(reason: .hang, frames: frames(["work", "main"], addressBase: 0x1000))
        let two = StallFingerprint.make(reason: .hang, frames: frames(["work", "main"], addressBase: 0x9000))
        #expect(one == two)
        #expect(one.hasPrefix("hang-"))
        #expect(one.count == "hang-".count + 16)
        // Fixed across runs and platforms (FNV-1a, not the seeded Hasher).
        #expect(one == StallFingerprint.make(reason: .hang, frames: frames(["work", "main"], addressBase: 0)))
        #expect(StallFingerprint.make(reason: .hang, frames: []) == "hang-" + StallFingerprintTests.fnv("hang"))
    }

    @Test func differsByReasonAndByFunctions() {
        let stack = frames(["work", "main"], addressBase: 0)
        #expect(StallFingerprint.make(reason: .hang, frames: stack) != StallFingerprint.make(reason: .io, frames: stack))
        #expect(
            StallFingerprint.make(reason: .hang, frames: stack)
                != StallFingerprint.make(reason: .hang, frames: frames(["other", "main"], addressBase: 0)))
        #expect(
            StallFingerprint.make(reason: .lock, frames: stack) != StallFingerprint.make(reason: .deadlock, frames: stack))
    }

    @Test func recursionDepthDoesNotChangeIt() {
        let shallow = frames(["f", "f", "main"], addressBase: 0)
        let deep = frames(["f", "f", "f", "f", "f", "main"], addressBase: 0)
        #expect(StallFingerprint.make(reason: .hang, frames: shallow) == StallFingerprint.make(reason: .hang, frames: deep))
    }

    @Test func recurringStallInTheDetectorKeepsItsFingerprintAcrossDeath() throws {
        var scenario = DetectionScenario.inLoop()
        scenario.run(.running, for: 1.2)
        scenario.run(.idle, for: 0.1)
        scenario.run(.running, for: 1.2)
        scenario.finish(targetGone: true)
        #expect(scenario.ended.count == 2)
        #expect(scenario.ended[0].fingerprint == scenario.ended[1].fingerprint)
        #expect(scenario.ended[1].reason == .died)
    }

    @Test func bookWritesReportsOnFibonacciOccurrences() {
        var book = StallFingerprintBook()
        var written: [Int] = []
        for _ in 1...30 {
            let decision = book.record("hang-abc")
            if decision.shouldWriteReport { written.append(decision.occurrence) }
        }
        #expect(written == [1, 2, 3, 5, 8, 13, 21])
        #expect(book.occurrences(of: "hang-abc") == 30)
        #expect(book.entries["hang-abc"]?.reportsWritten == 7)
        let other = book.record("io-def")
        #expect(other.shouldWriteReport)  // counted per fingerprint
        #expect(book.peek("hang-abc").occurrence == 31)
        #expect(book.peek("hang-abc").shouldWriteReport == false)
        #expect(StallFingerprintBook.isReportOccurrence(34))
        #expect(!StallFingerprintBook.isReportOccurrence(0))
        #expect(!StallFingerprintBook.isReportOccurrence(4))
    }

    @Test func bookRoundTripsThroughJSON() throws {
        var book = StallFingerprintBook(capacity: 100)
        for _ in 0..<4 { _ = book.record("hang-1") }
        _ = book.record("lock-2")
        let data = try JSONEncoder().encode(book)
        var restored = try JSONDecoder().decode(StallFingerprintBook.self, from: data)
        #expect(restored == book)
        #expect(restored.capacity == 100)
        #expect(restored.formatVersion == StallFingerprintBook.currentFormatVersion)
        // Counting goes on where it left off: occurrence 5 of hang-1 is a report occurrence.
        let next = restored.record("hang-1")
        #expect(next.occurrence == 5)
        #expect(next.shouldWriteReport)
    }

    @Test func bookForgetsTheLeastRecentlySeenPastCapacity() {
        var book = StallFingerprintBook(capacity: 2)
        _ = book.record("a")
        _ = book.record("b")
        _ = book.record("a")
        _ = book.record("c")
        #expect(book.entries.keys.sorted() == ["a", "c"])
    }

    @Test func mergeAddsCounts() {
        var saved = StallFingerprintBook()
        _ = saved.record("a")
        _ = saved.record("a")
        var fresh = StallFingerprintBook()
        _ = fresh.record("a")
        fresh.merge(saved)
        #expect(fresh.occurrences(of: "a") == 3)
    }

    /// Reference FNV-1a 64, written independently of the library's.
    static func fnv(_ text: String) -> String {
        var hash: UInt64 = 14_695_981_039_346_656_037
        for byte in text.utf8 {
            hash = (hash ^ UInt64(byte)) &* 1_099_511_628_211
        }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

@Suite struct StallFingerprintLoadTests {
    /// The same CPU-bound stack on a quiet and on a loaded host is one stall.
    @Test func starvedAndHangShareAFingerprint() {
        let frames = [SampledFrame(function: "busy_compute", module: "app"), SampledFrame(function: "main", module: "app")]
        #expect(StallFingerprint.make(reason: .starved, frames: frames) == StallFingerprint.make(reason: .hang, frames: frames))
        #expect(StallFingerprint.make(reason: .blocked, frames: frames) != StallFingerprint.make(reason: .hang, frames: frames))
    }
}

@Suite struct StallFingerprintLeafTests {
    /// A clock read or syscall wrapper on top of some samples is the same stall.
    @Test func systemLeafFramesDoNotSplitAStall() {
        let program = [SampledFrame(function: "busy_compute", module: "app"), SampledFrame(function: "main", module: "app")]
        let withClock =
            [
                SampledFrame(function: "clock_gettime", module: "linux-vdso.so.1"),
                SampledFrame(function: "clock_gettime", module: "libc.so.6"),
            ] + program
        #expect(StallFingerprint.make(reason: .hang, frames: withClock) == StallFingerprint.make(reason: .hang, frames: program))
        let onlyLibc = [SampledFrame(function: "epoll_wait", module: "libc.so.6")]
        #expect(StallFingerprint.make(reason: .blocked, frames: onlyLibc) != StallFingerprint.make(reason: .blocked, frames: []))
    }
}

/// Issue 30: with the application's frames marked, the fingerprint is theirs alone, and says
/// where each calls from.
@Suite struct StallFingerprintAppFrameTests {
    static func frame(_ name: String, app: Bool, site: Int? = nil) -> SampledFrame {
        SampledFrame(function: name, module: app ? "server" : "libc.so.6", isApp: app, site: site)
    }

    @Test func libraryFramesDoNotCount() {
        let before = [Self.frame("clock_nanosleep", app: false, site: 35), Self.frame("handle", app: true, site: 27), Self.frame("main", app: true, site: 68)]
        var upgraded = before
        upgraded[0] = Self.frame("__clock_nanosleep64", app: false, site: 41)
        #expect(StallFingerprint.make(reason: .blocked, frames: before) == StallFingerprint.make(reason: .blocked, frames: upgraded))
    }

    @Test func anotherCallSiteIsAnotherStall() {
        let a = [Self.frame("usleep", app: false, site: 69), Self.frame("handle", app: true, site: 27), Self.frame("main", app: true, site: 68)]
        var b = a
        b[1] = Self.frame("handle", app: true, site: 45)
        #expect(StallFingerprint.make(reason: .blocked, frames: a) != StallFingerprint.make(reason: .blocked, frames: b))
    }

    /// A CPU loop is somewhere else in its function at every sample: one stall still.
    @Test func whereAHangRunsDoesNotCount() {
        let a = [Self.frame("PyNumber_Add", app: false, site: 12), Self.frame("parse", app: true, site: 10), Self.frame("main", app: true, site: 3)]
        var b = a
        b[1] = Self.frame("parse", app: true, site: 14)
        #expect(StallFingerprint.make(reason: .hang, frames: a) == StallFingerprint.make(reason: .hang, frames: b))
        let leafA = [Self.frame("spin", app: true, site: 5), Self.frame("main", app: true, site: 3)]
        var leafB = leafA
        leafB[0] = Self.frame("spin", app: true, site: 9)
        #expect(StallFingerprint.make(reason: .hang, frames: leafA) == StallFingerprint.make(reason: .hang, frames: leafB))
    }
}
