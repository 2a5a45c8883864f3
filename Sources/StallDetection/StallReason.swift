/// A stall's reason code, in the spirit of iOS's `0x8badf00d` (docs/architecture.md, "Reason codes").
///
/// A struct with static constants rather than an enum so that the name can vary for one code
/// (`lock` / `deadlock` share `0xdead10cc`) and so that reports read back from disk keep any
/// code they carry. Equality compares both code and name.
public struct StallReason: Hashable, Sendable, CustomStringConvertible {
    public var code: UInt32
    public var name: String

    public init(code: UInt32, name: String) {
        self.code = code
        self.name = name
    }

    /// Busy on CPU: heavy computation, rendering, parsing.
    public static let hang = StallReason(code: 0x8bad_f00d, name: "hang")
    /// Waiting on a lock.
    public static let lock = StallReason(code: 0xdead_10cc, name: "lock")
    /// Waiting on a lock whose wait-for chain loops back (set by the agent, which sees owners).
    public static let deadlock = StallReason(code: 0xdead_10cc, name: "deadlock")
    /// Blocked in disk or file I/O.
    public static let io = StallReason(code: 0xd15c_b10c, name: "io")
    /// Blocked in another synchronous call: network, sleep, pipe, child process.
    public static let blocked = StallReason(code: 0xbaad_ca11, name: "blocked")
    /// Runnable but not running: CPU contention, cgroup throttling.
    public static let starved = StallReason(code: 0xc000_10ff, name: "starved")
    /// The process died or was killed while stalled.
    public static let died = StallReason(code: 0xdead_fa11, name: "died")
    /// An on-demand capture, not a stall.
    public static let snapshot = StallReason(code: 0xbaaa_aaad, name: "snapshot")

    /// Every reason this project defines, for look-ups, documentation and tests.
    public static let allKnown: [StallReason] = [.hang, .lock, .deadlock, .io, .blocked, .starved, .died, .snapshot]

    /// The known reason with this name ("hang", "deadlock", …), or nil.
    public static func named(_ name: String) -> StallReason? {
        allKnown.first { $0.name == name }
    }

    /// The code as reports print it: "0x" and eight lower-case hex digits, e.g. "0x8badf00d".
    public var hexCode: String {
        Self.formatHex(code)
    }

    /// "0x8badf00d (hang)", as in the report's Termination Reason line.
    public var description: String {
        "\(hexCode) (\(name))"
    }

    /// Formats a code as "0x%08x" without Foundation.
    public static func formatHex(_ code: UInt32) -> String {
        let digits = String(code, radix: 16, uppercase: false)
        return "0x" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }

    /// Parses "0x8badf00d" / "8BADF00D"; nil when it is not a 32-bit hex number.
    public static func parseHex(_ text: String) -> UInt32? {
        var body = Substring(text)
        if body.hasPrefix("0x") || body.hasPrefix("0X") { body = body.dropFirst(2) }
        guard !body.isEmpty, body.count <= 8 else { return nil }
        return UInt32(body, radix: 16)
    }
}

extension StallReason: Codable {
    private enum CodingKeys: String, CodingKey {
        case code, name
    }

    /// Encodes `{"code": "0x8badf00d", "name": "hang"}`: the hex string is what people search
    /// for, and JSON numbers lose nothing here but are unreadable for these values.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(hexCode, forKey: .code)
        try container.encode(name, forKey: .name)
    }

    /// Accepts the code as a hex string (what `encode` writes) or as a plain number, so that
    /// hand-written or older JSON still decodes.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(String.self, forKey: .name)
        if let number = try? container.decode(UInt32.self, forKey: .code) {
            self.init(code: number, name: name)
            return
        }
        let text = try container.decode(String.self, forKey: .code)
        guard let number = Self.parseHex(text) else {
            throw DecodingError.dataCorruptedError(
                forKey: .code, in: container, debugDescription: "not a 32-bit hex reason code: \(text)")
        }
        self.init(code: number, name: name)
    }
}
