import StallSymbols

/// A loaded module, as the "Binary Images" section lists it: enough to symbolicate a frame's
/// module offset later against the right file.
public struct ReportBinaryImage: Codable, Sendable, Equatable {
    /// Lowest and highest (exclusive) mapped address of the module in the target.
    public var start: UInt64
    public var end: UInt64
    /// File name, as frames name their module.
    public var name: String
    public var path: String
    public var buildId: String?
    /// Why the agent could not read the module's file (a hung mount, a file replaced since it
    /// was mapped); its frames then have no names or build-id. Absent when it was read.
    public var unavailable: String?

    public init(start: UInt64, end: UInt64, name: String, path: String, buildId: String? = nil, unavailable: String? = nil) {
        self.start = start
        self.end = end
        self.name = name
        self.path = path
        self.buildId = buildId
        self.unavailable = unavailable
    }

    private enum CodingKeys: String, CodingKey {
        case start, end, name, path, buildId, unavailable
    }

    // Addresses are hex strings, like frame addresses (`SymbolizedFrame`): JSON numbers lose
    // precision past 2^53 in many readers.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(SymbolizedFrame.hex(start), forKey: .start)
        try c.encode(SymbolizedFrame.hex(end), forKey: .end)
        try c.encode(name, forKey: .name)
        try c.encode(path, forKey: .path)
        try c.encode(buildId, forKey: .buildId)
        try c.encodeIfPresent(unavailable, forKey: .unavailable)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func address(_ key: CodingKeys) throws -> UInt64 {
            let text = try c.decode(String.self, forKey: key)
            guard let value = SymbolizedFrame.parseHex(text) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "not a hex address: \(text)")
            }
            return value
        }
        start = try address(.start)
        end = try address(.end)
        name = try c.decode(String.self, forKey: .name)
        path = try c.decode(String.self, forKey: .path)
        buildId = try c.decodeIfPresent(String.self, forKey: .buildId)
        unavailable = try c.decodeIfPresent(String.self, forKey: .unavailable)
    }
}
