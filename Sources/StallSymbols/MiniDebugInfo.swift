import CLzma

/// `.gnu_debugdata` (MiniDebugInfo, as Fedora and others ship it): an xz-compressed ELF
/// holding the `.symtab` entries that `.dynsym` lacks, so a stripped binary still names its
/// static functions.
public enum MiniDebugInfo {
    /// The uncompressed image of an xz stream, or nil when it is not valid xz, is truncated,
    /// would exceed `limit` bytes, or `reserve` refuses the next chunk's bytes (a decompression
    /// bomb must not exhaust memory: `InflationBudget`).
    public static func decompress(
        _ input: UnsafeRawBufferPointer, limit: Int = 256 << 20, reserve: (Int) -> Bool = { _ in true }
    ) -> [UInt8]? {
        guard let inputBase = input.baseAddress, input.count > 0 else { return nil }
        var stream = lzma_stream()
        guard lzma_stream_decoder(&stream, UInt64(limit) * 2, 0) == LZMA_OK else { return nil }
        defer { lzma_end(&stream) }
        stream.next_in = inputBase.assumingMemoryBound(to: UInt8.self)
        stream.avail_in = input.count
        // Decoded into chunks of their own, joined once the stream ended: a growing array
        // copies itself as it doubles, and a bomb refused at the budget held twice the budget
        // at that moment (issue 27).
        var chunks: [[UInt8]] = []
        var total = 0
        while true {
            var chunk = [UInt8](repeating: 0, count: 1 << 20)
            var filled = 0
            var status = LZMA_OK
            while filled < chunk.count {
                let wanted = chunk.count - filled
                let before = stream.avail_in
                status = chunk.withUnsafeMutableBufferPointer { buffer -> lzma_ret in
                    stream.next_out = buffer.baseAddress! + filled
                    stream.avail_out = wanted
                    return lzma_code(&stream, LZMA_FINISH)
                }
                let produced = wanted - stream.avail_out
                guard reserve(produced) else { return nil }
                filled += produced
                total += produced
                if total > limit { return nil }
                guard status == LZMA_OK else { break }
                // No progress with all input given: truncated.
                if produced == 0 && stream.avail_in == before { return nil }
            }
            if filled < chunk.count { chunk.removeLast(chunk.count - filled) }
            chunks.append(chunk)
            if status == LZMA_STREAM_END {
                var output: [UInt8] = []
                output.reserveCapacity(total)
                for index in chunks.indices {
                    output.append(contentsOf: chunks[index])
                    chunks[index] = []
                }
                return output
            }
            guard status == LZMA_OK else { return nil }
        }
    }

    /// Its bytes are held in `InflationBudget.shared` while the image lives.
    static func image(embeddedIn image: ElfImage, budget: InflationBudget = .shared) -> ElfImage? {
        guard let section = image.section(named: ".gnu_debugdata") else { return nil }
        var held = 0
        let bytes = decompress(section) { count in
            guard budget.reserve(count, for: image.path) else { return false }
            held += count
            return true
        }
        guard let bytes, let mini = try? ElfImage(memory: bytes, path: image.path + " [.gnu_debugdata]") else {
            budget.release(held)
            return nil
        }
        mini.holdBudget(budget, bytes: held)
        return mini
    }
}
