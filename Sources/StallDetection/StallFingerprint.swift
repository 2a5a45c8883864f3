/// Makes the fingerprint that recognises the same stall when it recurs, within one run or
/// across agent restarts: the cause's name (starved counts as hang) plus the heaviest stack's
/// function names (the application's own frames when it has any), with no
/// addresses, CFAs or counts, hashed with FNV-1a 64 (stable across processes and platforms,
/// unlike Swift's seeded `Hasher`).
///
/// Runs of the same function (recursion) are collapsed to one name, so the same recursive stall
/// matches at a different depth. The module is left out so that a rebuilt binary whose symbols
/// did not change still matches; unknown symbols ("module+0xOFF") carry their module anyway.
public enum StallFingerprint {
    /// "hang-1f0c…" : the reason name keeps it readable in file names and logs.
    public static func make(reason: StallReason, frames: [SampledFrame]) -> String {
        // Hang and starved are the same work on a quiet or a loaded host: one fingerprint, or
        // the same stall would count as new whenever the host's load changed.
        let reason = reason == .starved ? StallReason.hang : reason
        var hash = FNV1a64()
        hash.add(reason.name)
        var previous: String?
        // Leaf frames in the C library or the vDSO (a clock read, a syscall wrapper) come and go
        // between samples of the same stall: the fingerprint starts at the program's own frame.
        // Above an interpreted frame the interpreter's own C frames vary the same way.
        // Only the application's own frames when it has any: a library upgrade that moves only
        // library frames (another stdlib line, a renamed libc symbol) leaves the stall the same.
        // Each of them also says where in its function it is (the call site: an offset or a
        // Python line), so two stalls in one function on different lines are two fingerprints;
        // but not the innermost frame of the stack, nor in a hang the innermost of the
        // application's: where a CPU loop is moves from sample to sample of one stall.
        let app = frames.indices.filter { frames[$0].isApp == true }
        if !app.isEmpty {
            var previousSite: String?
            for index in app {
                let frame = frames[index]
                let moving = index == 0 || (index == app.first && reason == .hang)
                let site = moving ? "" : frame.site.map { "@\($0)" } ?? ""
                // Recursion collapses to one name, as below; a site keeps calls from two lines apart.
                guard frame.function != previous || site != previousSite else { continue }
                hash.add("\n")
                hash.add(frame.function + site)
                previous = frame.function
                previousSite = site
            }
            return reason.name + "-" + hash.hex
        }
        let start =
            frames.firstIndex(where: \.isInterpreted)
            ?? frames.firstIndex { !SampledFrame.isSystemModule($0.module) } ?? 0
        for frame in frames[start...] where frame.function != previous {
            hash.add("\n")
            hash.add(frame.function)
            previous = frame.function
        }
        return reason.name + "-" + hash.hex
    }

    public static func make(reason: StallReason, heaviestStack: HeaviestStack?) -> String {
        make(reason: reason, frames: heaviestStack?.frames ?? [])
    }

    /// 64-bit FNV-1a over UTF-8 bytes.
    struct FNV1a64 {
        private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

        mutating func add(_ text: String) {
            for byte in text.utf8 {
                value ^= UInt64(byte)
                value = value &* 0x0000_0100_0000_01b3
            }
        }

        var hex: String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
    }
}
