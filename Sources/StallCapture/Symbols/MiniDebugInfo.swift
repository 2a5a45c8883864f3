import CLzma

/// `.gnu_debugdata` (MiniDebugInfo, as Fedora and others ship it): an xz-compressed ELF
/// holding the `.symtab` entries that `.dynsym` lacks, so a stripped binary still names its
/// static functions.
public enum MiniDebugInfo {
    /// The uncompressed image of an xz stream, or nil when it is not valid xz, is truncated,
    /// or would exceed `limit` bytes (a decompression bomb must not exhaust memory).
    public static func decompress(_ input: UnsafeRawBufferPointer, limit: Int = 256 << 20) -> [UInt8]? {
        guard let inputBase = input.baseAddress, input.count > 0 else { return nil }
        var stream = lzma_stream()
        guard lzma_stream_decoder(&stream, UInt64(limit) * 2, 0) == LZMA_OK else { return nil }
        defer { lzma_end(&stream) }
        stream.next_in = inputBase.assumingMemoryBound(to: UInt8.self)
        stream.avail_in = input.count
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let before = stream.avail_in
            let (status, produced) = chunk.withUnsafeMutableBufferPointer { buffer -> (lzma_ret, Int) in
                stream.next_out = buffer.baseAddress
                stream.avail_out = buffer.count
                let status = lzma_code(&stream, LZMA_FINISH)
                return (status, buffer.count - stream.avail_out)
            }
            output.append(contentsOf: chunk[0..<produced])
            if output.count > limit { return nil }
            if status == LZMA_STREAM_END { return output }
            guard status == LZMA_OK else { return nil }
            // No progress with all input given: truncated.
            if produced == 0 && stream.avail_in == before { return nil }
        }
    }

    /// The embedded image of `image`, or nil when it has none or it is unusable.
    static func image(embeddedIn image: ElfImage) -> ElfImage? {
        guard let section = image.section(named: ".gnu_debugdata"),
            let bytes = decompress(section)
        else { return nil }
        return try? ElfImage(memory: bytes, path: image.path + " [.gnu_debugdata]")
    }
}
