/// An amount of memory or disk as users type it (`512KiB`, `200MB`, `4096`).
public struct ByteSize: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var bytes: Int64

    public init(bytes: Int64) { self.bytes = bytes }

    public static func kibibytes(_ value: Int64) -> ByteSize { ByteSize(bytes: value << 10) }
    public static func mebibytes(_ value: Int64) -> ByteSize { ByteSize(bytes: value << 20) }
    public static func exbibytes(_ value: Int64) -> ByteSize { ByteSize(bytes: value << 60) }

    public static func < (lhs: ByteSize, rhs: ByteSize) -> Bool { lhs.bytes < rhs.bytes }

    /// The largest unit that shows the value whole, binary before decimal (`4KiB`, `200MB`).
    public var description: String {
        guard bytes != 0 else { return "0B" }
        let units: [(String, Int64)] = [
            ("EiB", 1 << 60), ("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10),
            ("TB", 1_000_000_000_000), ("GB", 1_000_000_000), ("MB", 1_000_000), ("kB", 1000),
        ]
        for (suffix, scale) in units where bytes % scale == 0 { return "\(bytes / scale)\(suffix)" }
        return "\(bytes)B"
    }
}

extension ByteSize: SettingValue {
    public static var expectation: String { "a size (examples: 64KiB, 500MB, 2GiB)" }

    public static func parse(_ text: String) -> SettingParse<ByteSize> {
        guard let bytes = ByteSizeParser.parseSigned(text) else { return .malformed }
        // Below 2^63 with room for Double's rounding of the product.
        guard bytes >= 0, bytes < 9e18 else { return .outOfRange }
        return .value(ByteSize(bytes: Int64(bytes)))
    }
}
