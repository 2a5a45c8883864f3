import StallProc

/// Bounded reads of a target's memory for the script readers (Python, JavaScript, PHP, Ruby):
/// every read has a fixed size and a failed or short read is nil, never a partial value.
struct TargetReader {
    let pid: Int32

    func bytes(_ address: UInt64, _ count: Int) -> [UInt8]? {
        guard address != 0, count > 0, count <= 1 << 20, address &+ UInt64(count) > address else { return nil }
        var buffer = [UInt8](repeating: 0, count: count)
        let n = buffer.withUnsafeMutableBytes { TargetMemory.read(pid: pid, address: address, into: $0) }
        return n == count ? buffer : nil
    }

    func word(_ address: UInt64) -> UInt64? {
        bytes(address, 8).map { TargetReader.word($0, 0) }
    }

    static func word(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
        guard offset >= 0, offset + 8 <= bytes.count else { return 0 }
        var value: UInt64 = 0
        for i in 0..<8 { value |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        return value
    }

    static func word(_ bytes: [UInt8], _ offset: UInt64) -> UInt64 { word(bytes, Int(clamping: offset)) }

    static func int32(_ bytes: [UInt8], _ offset: UInt64) -> Int32 {
        let o = Int(clamping: offset)
        guard o + 4 <= bytes.count else { return 0 }
        return Int32(bitPattern: UInt32(bytes[o]) | UInt32(bytes[o + 1]) << 8 | UInt32(bytes[o + 2]) << 16 | UInt32(bytes[o + 3]) << 24)
    }
}
