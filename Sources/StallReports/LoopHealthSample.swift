import Foundation

/// One interval of a watched loop's health, as a report directory would record it in
/// `*.loop.jsonl` (one JSON object a line, appended by the monitor): the turns of the loop
/// and the time it was busy in the interval ending at `time`. `view` draws these as the
/// timeline's busy share and turns per second; a directory without them gets stall bars only.
public struct LoopHealthSample: Codable, Sendable, Equatable {
    /// End of the interval (ISO-8601, as reports write times).
    public var time: Date
    /// Length of the interval.
    public var seconds: Double
    public var pid: Int32
    public var name: String
    public var hostname: String
    public var unit: String?
    /// Loop turns in the interval (exact with the kernel counter or loop probe, a lower
    /// bound with the stack rule).
    public var turns: UInt64
    public var busySeconds: Double
    /// Longest busy turn that ended in the interval; 0 when none did.
    public var longestTurnSeconds: Double
    /// `LoopTurnEvidence` raw value.
    public var evidence: String?

    public init(
        time: Date, seconds: Double, pid: Int32, name: String, hostname: String, unit: String? = nil, turns: UInt64, busySeconds: Double,
        longestTurnSeconds: Double, evidence: String? = nil
    ) {
        self.time = time
        self.seconds = seconds
        self.pid = pid
        self.name = name
        self.hostname = hostname
        self.unit = unit
        self.turns = turns
        self.busySeconds = busySeconds
        self.longestTurnSeconds = longestTurnSeconds
        self.evidence = evidence
    }

    private enum CodingKeys: String, CodingKey {
        case time, seconds, pid, name, hostname, unit, turns, busySeconds, longestTurnSeconds, evidence
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let text = try c.decode(String.self, forKey: .time)
        guard let time = ReportTime.parse(text) else {
            throw DecodingError.dataCorruptedError(forKey: .time, in: c, debugDescription: "not an ISO-8601 time: \(text)")
        }
        self.time = time
        seconds = try c.decode(Double.self, forKey: .seconds)
        pid = try c.decode(Int32.self, forKey: .pid)
        name = try c.decode(String.self, forKey: .name)
        hostname = try c.decodeIfPresent(String.self, forKey: .hostname) ?? ""
        unit = try c.decodeIfPresent(String.self, forKey: .unit)
        turns = try c.decode(UInt64.self, forKey: .turns)
        busySeconds = try c.decode(Double.self, forKey: .busySeconds)
        longestTurnSeconds = try c.decodeIfPresent(Double.self, forKey: .longestTurnSeconds) ?? 0
        evidence = try c.decodeIfPresent(String.self, forKey: .evidence)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(ReportTime.iso8601(time), forKey: .time)
        try c.encode(seconds, forKey: .seconds)
        try c.encode(pid, forKey: .pid)
        try c.encode(name, forKey: .name)
        try c.encode(hostname, forKey: .hostname)
        try c.encode(unit, forKey: .unit)
        try c.encode(turns, forKey: .turns)
        try c.encode(busySeconds, forKey: .busySeconds)
        try c.encode(longestTurnSeconds, forKey: .longestTurnSeconds)
        try c.encode(evidence, forKey: .evidence)
    }
}
