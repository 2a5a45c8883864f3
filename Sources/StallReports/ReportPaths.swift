/// Where `ReportWriter.write` put a report's files.
public struct ReportPaths: Sendable, Equatable {
    public var text: String
    public var json: String
    public var folded: String?
    /// The file name without its suffix (rewrites of the same stall keep it).
    public var stem: String?

    public init(text: String, json: String, folded: String? = nil) {
        self.text = text
        self.json = json
        self.folded = folded
    }
}
