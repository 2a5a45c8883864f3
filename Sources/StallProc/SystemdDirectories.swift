/// The directories systemd made for the service (`StateDirectory=`, `CacheDirectory=`,
/// `LogsDirectory=`). Each variable is a colon-separated list, one absolute path per entry in
/// the order of the unit's setting: `StateDirectory=stallagent stallagent/metrics` gives
/// `STATE_DIRECTORY=/var/lib/stallagent:/var/lib/stallagent/metrics`. The first entry is the
/// service's own directory; later ones are the extra directories the unit asked for.
public struct SystemdDirectories: Sendable, Equatable {
    public var state: [String]
    public var cache: [String]
    public var logs: [String]

    public init(environment: [String: String]) {
        state = Self.list(environment["STATE_DIRECTORY"])
        cache = Self.list(environment["CACHE_DIRECTORY"])
        logs = Self.list(environment["LOGS_DIRECTORY"])
    }

    /// Where state, reports and fingerprints go: the first StateDirectory= entry.
    public var stateDirectory: String? { state.first }

    /// systemd joins the entries with ':' and nothing else, so splitting on it recovers them;
    /// empty pieces come only from a hand-set variable and name nothing.
    public static func list(_ value: String?) -> [String] {
        guard let value else { return [] }
        return value.split(separator: ":", omittingEmptySubsequences: true).map { piece in
            piece.count > 1 && piece.hasSuffix("/") ? String(piece.dropLast()) : String(piece)
        }
    }
}
