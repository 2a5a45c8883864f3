import Foundation

/// The pictures `stallagent view` draws.
public enum ViewFormat: String, CaseIterable, Sendable {
    case html, svg, speedscope, pprof

    /// The output's name beside the reports when no -o is given.
    public var defaultFileName: String {
        switch self {
        case .html: return "stalls.html"
        case .svg: return "stalls.svg"
        case .speedscope: return "stalls.speedscope.json"
        case .pprof: return "stalls.pb.gz"
        }
    }

    public func render(_ collection: ReportCollection, generator: String, version: String) throws -> Data {
        switch self {
        case .html: return try HTMLReportRenderer.render(collection, generator: generator)
        case .svg: return Data(FlameGraphSVGRenderer.render(collection).utf8)
        case .speedscope: return try SpeedscopeRenderer.render(collection, exporter: "stallagent@\(version)")
        case .pprof: return try PprofRenderer.render(collection)
        }
    }
}
