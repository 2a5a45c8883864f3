import Foundation

@testable import StallCapture
@testable import StallSymbols

/// Compiles a fixture program at test time and makes the variants production ships: the
/// `-g` build, a stripped copy with its debug file by build-id, one with a debuglink, and one
/// with no debug file at all. Built once per process (a few hundred ms of cc).
final class NativeFixture: @unchecked Sendable {
    let directory: URL
    let unstripped: URL
    /// Stripped; the debug file only under `debugDirectory/.build-id/`.
    let strippedByBuildID: URL
    /// Stripped, with `.gnu_debuglink` naming a debug file next to it.
    let strippedByDebugLink: URL
    /// Stripped, no debug file anywhere.
    let strippedBare: URL
    let debugDirectory: URL
    let debugFile: URL
    let buildID: String

    static func sourceURL(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Symbols/Fixtures/\(name)")
    }

    static func tool(_ name: String) throws -> URL {
        for dir in ["/usr/bin", "/usr/local/bin", "/opt/swift/usr/bin", "/root/.cargo/bin"] {
            let url = URL(fileURLWithPath: dir).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw NativeFixtureError.missingTool(name)
    }

    static func run(_ tool: String, _ arguments: [String]) throws {
        let result = try runCommand(try Self.tool(tool), arguments, timeout: 120)
        guard result.status == 0 else {
            throw NativeFixtureError.failed("\(tool) \(arguments.joined(separator: " ")): \(result.stderr)")
        }
    }

    /// `compile` builds `unstripped` from the source; the rest is the same for every language.
    init(name: String, compile: (URL) throws -> Void) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("stallagent-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        unstripped = directory.appendingPathComponent("\(name)-g")
        try compile(unstripped)
        buildID = try ElfImage(path: unstripped.path).buildID ?? ""
        guard buildID.count > 2 else { throw NativeFixtureError.failed("no build-id in \(unstripped.path)") }

        debugFile = directory.appendingPathComponent("\(name).debug")
        try Self.run("objcopy", ["--only-keep-debug", unstripped.path, debugFile.path])

        debugDirectory = directory.appendingPathComponent("debug")
        let byID = debugDirectory.appendingPathComponent(".build-id/\(buildID.prefix(2))")
        try FileManager.default.createDirectory(at: byID, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: debugFile, to: byID.appendingPathComponent("\(buildID.dropFirst(2)).debug"))

        strippedBare = directory.appendingPathComponent("\(name)-bare")
        try Self.run("strip", ["--strip-all", "-o", strippedBare.path, unstripped.path])
        strippedByBuildID = directory.appendingPathComponent("\(name)-byid")
        try FileManager.default.copyItem(at: strippedBare, to: strippedByBuildID)
        strippedByDebugLink = directory.appendingPathComponent("\(name)-link")
        // objcopy records the CRC of the file as it is now, from the working directory it
        // finds the file in; the debuglink then names "<name>.debug" beside the binary.
        try Self.run("objcopy", ["--add-gnu-debuglink=\(debugFile.path)", strippedBare.path, strippedByDebugLink.path])
    }

    static func c(_ source: String, name: String, flags: [String] = ["-g", "-O1"]) throws -> NativeFixture {
        try NativeFixture(name: name) { output in
            try run("cc", flags + ["-o", output.path, sourceURL(source).path])
        }
    }

    /// The 1-based line of the first line containing `marker` in the fixture source.
    static func line(of marker: String, in source: String) throws -> Int {
        let text = try String(contentsOf: sourceURL(source), encoding: .utf8)
        guard
            let index = text.split(separator: "\n", omittingEmptySubsequences: false)
                .firstIndex(where: { $0.contains(marker) })
        else { throw NativeFixtureError.failed("no \(marker) in \(source)") }
        return index + 1
    }

    /// A stripped copy carrying MiniDebugInfo (`.gnu_debugdata`: xz of a symbols-only ELF), as
    /// Fedora ships binaries. Its `.symtab` is the full one here, which is enough to test.
    func makeMiniDebugInfo() throws -> URL {
        let mini = directory.appendingPathComponent("mini.elf")
        try Self.run("objcopy", ["--strip-debug", "--remove-section=.comment", debugFile.path, mini.path])
        try Self.run("xz", ["-f", "-k", mini.path])
        let output = directory.appendingPathComponent(unstripped.lastPathComponent.replacingOccurrences(of: "-g", with: "-mini"))
        try Self.run("objcopy", ["--add-section", ".gnu_debugdata=\(mini.path).xz", strippedBare.path, output.path])
        return output
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

enum NativeFixtureError: Error, CustomStringConvertible {
    case missingTool(String)
    case failed(String)
    var description: String {
        switch self {
        case .missingTool(let name): return "\(name) not found"
        case .failed(let text): return text
        }
    }
}
