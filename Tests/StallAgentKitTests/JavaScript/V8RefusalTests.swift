import Foundation
import Testing

/// A Node binary whose V8 is not read — built with pointer compression, or with postmortem
/// metadata that lacks a constant — keeps its machine frames and says why in the dump (issue
/// 26: "an unknown layout falls back to today's frames with a note, never a wrong name").
/// The binaries are small C programs named `node` that export the `v8dbg_*` constants as a
/// real one does.
@Suite struct V8RefusalTests {
    static func node(exporting constants: [String: Int]) throws -> URL {
        let directory = URL(fileURLWithPath: temporaryPath("v8refusal"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let source = directory.appendingPathComponent("node.c")
        let definitions = constants.sorted { $0.key < $1.key }.map { "__attribute__((used)) int v8dbg_\($0.key) = \($0.value);" }
        try
            (["#include <stdio.h>", "#include <unistd.h>"] + definitions + [
                "int main(void) { printf(\"ready\\n\"); fflush(stdout); for (;;) pause(); }"
            ]).joined(separator: "\n").write(to: source, atomically: true, encoding: .utf8)
        let binary = directory.appendingPathComponent("node")
        let compiled = try runCommand(try NativeFixture.tool("cc"), ["-O0", "-g", "-o", binary.path, source.path])
        #expect(compiled.status == 0, "\(compiled.stderr)")
        return binary
    }

    func dump(exporting constants: [String: Int]) throws -> String {
        let binary = try Self.node(exporting: constants)
        defer { try? FileManager.default.removeItem(at: binary.deletingLastPathComponent()) }
        let target = try FixtureProcess([], executable: binary)
        defer { target.stop() }
        let result = try runCommand(FixtureProcess.stallagentURL, ["dump", "--pid", "\(target.pid)"], timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        // Its machine frames are still there.
        #expect(result.stdout.contains("main"), "\(result.stdout)")
        return result.stdout
    }

    @Test func pointerCompressionIsSaidNotGuessed() throws {
        let text = try dump(exporting: ["TaggedSize": 4, "SmiShiftSize": 0, "HeapObjectTag": 1])
        #expect(text.contains("(script frames: V8 built with pointer compression"), "\(text)")
    }

    @Test func aLayoutMissingAConstantIsSaid() throws {
        let text = try dump(exporting: ["TaggedSize": 8, "SmiShiftSize": 31, "HeapObjectTag": 1])
        #expect(text.contains("(script frames: this V8's postmortem metadata lacks a constant"), "\(text)")
    }

    /// A program with no V8 metadata at all gets no note.
    @Test func anotherProgramGetsNoNote() throws {
        let text = try dump(exporting: [:])
        #expect(!text.contains("script frames:"), "\(text)")
    }
}
