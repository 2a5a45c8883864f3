import Foundation
import Testing

/// Debian's `chromium` (scripts/setup installs it), started per page with --dump-dom: the DOM
/// after the page's scripts ran, which is where the pages write what they found.
enum HeadlessChromium {
    static var url: URL? {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].map(URL.init(fileURLWithPath:))
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    static let missing: Comment = "Debian's chromium is not installed (scripts/setup installs it)"

    /// The serialized DOM of `file` opened with `fragment` (e.g. "selftest"), and how long the
    /// browser took from start to exit.
    static func dumpDOM(_ file: String, fragment: String? = nil) throws -> (dom: String, seconds: Double, stderr: String) {
        guard let url else { throw ChromiumError.missing }
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("chromium-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: profile) }
        var address = URL(fileURLWithPath: file).absoluteString
        if let fragment { address += "#" + fragment }
        let started = Date()
        // Root (the tests' user here) needs --no-sandbox; a profile of its own per run, so
        // lanes running side by side do not share a lock.
        let result = try runCommand(
            url,
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                "--user-data-dir=\(profile.path)", "--window-size=1400,1000", "--dump-dom", address,
            ], timeout: 60)
        let seconds = Date().timeIntervalSince(started)
        guard result.status == 0, result.stdout.contains("</html>") || result.stdout.contains("</svg>") else {
            throw ChromiumError.failed(status: result.status, stderr: String(result.stderr.suffix(2000)))
        }
        return (result.stdout, seconds, result.stderr)
    }

    /// An attribute of the first element that has it, with HTML's entities decoded.
    static func attribute(_ name: String, in dom: String) -> String? {
        guard let start = dom.range(of: " \(name)=\"") else { return nil }
        guard let end = dom.range(of: "\"", range: start.upperBound..<dom.endIndex) else { return nil }
        return decodeEntities(String(dom[start.upperBound..<end.lowerBound]))
    }

    /// The text of the element with this id (no nested elements), entities decoded.
    static func text(ofID id: String, in dom: String) -> String? {
        guard let open = dom.range(of: "id=\"\(id)\""), let close = dom.range(of: ">", range: open.upperBound..<dom.endIndex),
            let end = dom.range(of: "</", range: close.upperBound..<dom.endIndex)
        else { return nil }
        return decodeEntities(String(dom[close.upperBound..<end.lowerBound]))
    }

    static func decodeEntities(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&nbsp;", with: "\u{a0}").replacingOccurrences(of: "&amp;", with: "&")
    }

    enum ChromiumError: Error, CustomStringConvertible {
        case missing
        case failed(status: Int32, stderr: String)

        var description: String {
            switch self {
            case .missing: return "chromium is not installed"
            case .failed(let status, let stderr): return "chromium exited \(status): \(stderr)"
            }
        }
    }
}
