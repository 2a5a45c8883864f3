/// Where `ReportWriter.write` put a report's files.
public struct ReportPaths: Sendable, Equatable {
    public var text: String
    public var json: String
    public var folded: String?

    public init(text: String, json: String, folded: String? = nil) {
        self.text = text
        self.json = json
        self.folded = folded
    }
}
