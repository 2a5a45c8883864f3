import CLzma

/// The `.gnu_debuglink` section: the debug file's name and the CRC-32 of its whole contents.
/// The CRC is what proves a file found by name is the right one when there is no build-id.
public struct DebugLink: Equatable, Sendable {
    public var fileName: String
    public var crc: UInt32

    /// Parses the section: a NUL-terminated name, padding to 4 bytes, a little-endian CRC.
    /// Returns nil for anything malformed, including names that would leave the directory.
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> DebugLink? {
        guard let end = bytes.firstIndex(of: 0), end > 0, end < 4096 else { return nil }
        let crcOffset = (end + 1 + 3) & ~3
        guard crcOffset + 4 <= bytes.count else { return nil }
        let name = String(decoding: bytes[0..<end], as: UTF8.self)
        guard !name.contains("/"), name != ".", name != ".." else { return nil }
        let crc = bytes.loadUnaligned(fromByteOffset: crcOffset, as: UInt32.self)
        return DebugLink(fileName: name, crc: crc)
    }

    /// CRC-32 (IEEE, as zlib and GNU debuglink compute it), through liblzma.
    public static func crc32(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return 0 }
        var crc: UInt32 = 0
        var offset = 0
        // lzma_crc32 takes a size_t, but feeding it in slices keeps one call short.
        while offset < bytes.count {
            let n = min(bytes.count - offset, 1 << 30)
            crc = lzma_crc32(base.assumingMemoryBound(to: UInt8.self) + offset, n, crc)
            offset += n
        }
        return crc
    }
}
