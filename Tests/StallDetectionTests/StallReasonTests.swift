import Foundation
import Testing

@testable import StallDetection

@Suite("StallReason and StallReasonClassifier")
struct StallReasonTests {
    @Test func codesAndHexFormatting() {
        let expected: [(StallReason, String, String)] = [
            (.hang, "0x8badf00d", "hang"),
            (.lock, "0xdead10cc", "lock"),
            (.deadlock, "0xdead10cc", "deadlock"),
            (.io, "0xd15cb10c", "io"),
            (.blocked, "0xbaadca11", "blocked"),
            (.starved, "0xc00010ff", "starved"),
            (.died, "0xdeadfa11", "died"),
            (.snapshot, "0xbaaaaaad", "snapshot"),
        ]
        for (reason, hex, name) in expected {
            #expect(reason.hexCode == hex)
            #expect(reason.name == name)
            #expect(StallReason.named(name) == reason)
        }
        #expect(StallReason.hang.code == 0x8bad_f00d)
        #expect(StallReason.formatHex(0x1f) == "0x0000001f")
        #expect(StallReason.hang.description == "0x8badf00d (hang)")
        #expect(StallReason.lock != StallReason.deadlock)
        #expect(StallReason.parseHex("0x8BADF00D") == 0x8bad_f00d)
        #expect(StallReason.parseHex("0x123456789") == nil)
    }

    @Test func jsonCarriesTheHexCodeAndAcceptsNumbers() throws {
        let data = try JSONEncoder().encode(StallReason.io)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\"0xd15cb10c\""))
        #expect(try JSONDecoder().decode(StallReason.self, from: data) == .io)
        let numeric = Data(#"{"code": 2343432205, "name": "hang"}"#.utf8)
        #expect(try JSONDecoder().decode(StallReason.self, from: numeric) == .hang)
        let bad = Data(#"{"code": "zz", "name": "hang"}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(StallReason.self, from: bad) }
    }

    @Test func classifierPicksTheDominantFamily() {
        let classifier = StallReasonClassifier()
        #expect(classifier.classify(StallStateBreakdown(onCPU: 1)) == .hang)
        #expect(classifier.classify(StallStateBreakdown(onCPU: 0.4, runQueueWait: 0.6)) == .starved)
        #expect(classifier.classify(StallStateBreakdown(onCPU: 0.5, runQueueWait: 0.5)) == .hang)  // equal: not starved
        #expect(classifier.classify(StallStateBreakdown(onCPU: 0.2, lockWait: 0.5, ioWait: 0.3)) == .lock)
        #expect(classifier.classify(StallStateBreakdown(onCPU: 0.2, ioWait: 0.5, blockedCall: 0.3)) == .io)
        #expect(classifier.classify(StallStateBreakdown(onCPU: 0.2, blockedCall: 0.5)) == .blocked)
        // Running counts as one family: 0.3 + 0.3 beats a 0.5 lock wait.
        #expect(classifier.classify(StallStateBreakdown(onCPU: 0.3, runQueueWait: 0.3, lockWait: 0.5)) == .hang)
        // Stopped time never decides.
        #expect(classifier.classify(StallStateBreakdown(blockedCall: 0.1, stopped: 9)) == .blocked)
        #expect(classifier.classify(StallStateBreakdown()) == .hang)
    }

    @Test func classifierTieBreaksPreferNamedWaits() {
        let classifier = StallReasonClassifier()
        #expect(classifier.classify(StallStateBreakdown(onCPU: 0.5, lockWait: 0.5)) == .lock)
        #expect(classifier.classify(StallStateBreakdown(lockWait: 0.5, ioWait: 0.5)) == .lock)
        #expect(classifier.classify(StallStateBreakdown(ioWait: 0.5, blockedCall: 0.5)) == .io)
        #expect(classifier.classify(StallStateBreakdown(onCPU: 0.5, blockedCall: 0.5)) == .blocked)
    }

    @Test func starvationRatioIsConfigurable() {
        let strict = StallReasonClassifier(starvationRatio: 2)
        #expect(strict.classify(StallStateBreakdown(onCPU: 0.4, runQueueWait: 0.6)) == .hang)
        #expect(strict.classify(StallStateBreakdown(onCPU: 0.3, runQueueWait: 0.7)) == .starved)
    }
}
