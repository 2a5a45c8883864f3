/// The watched process as a report names it.
public struct ReportProcessInfo: Codable, Sendable, Equatable {
    public var pid: Int32
    /// Short name (`/proc/PID/comm`, or the executable's file name).
    public var name: String
    /// Executable path, when it could be read.
    public var path: String?
    /// GNU build-id of the executable (hex), for offline symbolication.
    public var buildId: String?
    /// argv, when it could be read.
    public var commandLine: [String]?
    /// The systemd unit watched as a whole that the process belongs to, when it was found
    /// through one (`--unit`, `unit:` in the config file).
    public var unit: String?

    public init(
        pid: Int32, name: String, path: String? = nil, buildId: String? = nil, commandLine: [String]? = nil,
        unit: String? = nil
    ) {
        self.pid = pid
        self.name = name
        self.path = path
        self.buildId = buildId
        self.commandLine = commandLine
        self.unit = unit
    }

    private enum CodingKeys: String, CodingKey {
        case pid, name, path, buildId, commandLine, unit
    }

    // Unknown values are written as null rather than left out, so every report has the same
    // keys (docs/report-schema.md).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(pid, forKey: .pid)
        try c.encode(name, forKey: .name)
        try c.encode(path, forKey: .path)
        try c.encode(buildId, forKey: .buildId)
        try c.encode(commandLine, forKey: .commandLine)
        try c.encode(unit, forKey: .unit)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        pid = try c.decode(Int32.self, forKey: .pid)
        name = try c.decode(String.self, forKey: .name)
        path = try c.decodeIfPresent(String.self, forKey: .path)
        buildId = try c.decodeIfPresent(String.self, forKey: .buildId)
        commandLine = try c.decodeIfPresent([String].self, forKey: .commandLine)
        unit = try c.decodeIfPresent(String.self, forKey: .unit)
    }
}
