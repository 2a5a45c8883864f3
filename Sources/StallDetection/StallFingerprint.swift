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
        let app = frames.filter { $0.isApp == true }
        let start =
            frames.firstIndex(where: \.isInterpreted)
            ?? frames.firstIndex { !SampledFrame.isSystemModule($0.module) } ?? 0
        for frame in app.isEmpty ? Array(frames[start...]) : app where frame.function != previous {
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
