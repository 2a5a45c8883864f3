import Foundation
import Testing

@testable import StallCapture

/// The location-table decoder against CPython's own `co_lines()`, for every function of a large
/// standard-library module, per interpreter version.
@Suite struct PythonLineTableTests {
    typealias P = PythonInterpreters

    /// Prints, per code object: first line, the table in hex, and (start, end, line) ranges.
    static let dumper = """
        import asyncio.base_events as m, types
        def walk(code):
            yield code
            for c in code.co_consts:
                if isinstance(c, types.CodeType):
                    yield from walk(c)
        src = open(m.__file__).read()
        for code in walk(compile(src, m.__file__, "exec")):
            ranges = ",".join("%d:%d:%s" % (s, e, "-" if l is None else l) for s, e, l in code.co_lines())
            print(code.co_firstlineno, code.co_linetable.hex(), ranges)

        """

    @Test(.enabled(if: P.has(P.pyenv311), P.missing(P.pyenv311))) func pyenv311() throws { try check(P.pyenv311) }
    @Test(.enabled(if: P.has(P.pyenv312), P.missing(P.pyenv312))) func pyenv312() throws { try check(P.pyenv312) }
    @Test(.enabled(if: P.has(P.pyenv313), P.missing(P.pyenv313))) func pyenv313() throws { try check(P.pyenv313) }

    func check(_ python: String) throws {
        let script = try P.script("dump_lines.py", Self.dumper)
        defer { try? FileManager.default.removeItem(atPath: (script as NSString).deletingLastPathComponent) }
        let result = try runCommand(URL(fileURLWithPath: python), [script])
        #expect(result.status == 0, "\(result.stderr)")
        var codes = 0
        var units = 0
        var mismatches: [String] = []
        for line in result.stdout.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: false)
            guard parts.count == 3, let first = Int(parts[0]) else { continue }
            let table = stride(from: 0, to: parts[1].count, by: 2).map { i -> UInt8 in
                let start = parts[1].index(parts[1].startIndex, offsetBy: i)
                return UInt8(parts[1][start...parts[1].index(after: start)], radix: 16)!
            }
            codes += 1
            for range in parts[2].split(separator: ",") {
                let fields = range.split(separator: ":")
                guard fields.count == 3, let start = Int(fields[0]), let end = Int(fields[1]), let expected = Int(fields[2])
                else { continue }
                for unit in (start / 2)..<(end / 2) {
                    units += 1
                    let got = PythonLineTable.line(for: unit, table: table, firstLine: first)
                    if got != expected, mismatches.count < 5 { mismatches.append("first \(first) unit \(unit): \(got) != \(expected)") }
                }
            }
        }
        #expect(codes > 50)
        #expect(units > 5000)
        #expect(mismatches.isEmpty, "\(mismatches)")
    }

    @Test func garbageTablesNeverTrap() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let table = (0..<Int.random(in: 0..<64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = PythonLineTable.line(for: Int.random(in: -2..<200, using: &generator), table: table, firstLine: 10)
        }
        #expect(PythonLineTable.line(for: 0, table: [], firstLine: 7) == 7)
        #expect(PythonLineTable.line(for: -1, table: [0xff], firstLine: 7) == 7)
        // A long-form entry whose varint runs off the table's end: the delta read so far counts.
        #expect(PythonLineTable.line(for: 0, table: [0xf0, 0x44, 0x40], firstLine: 1) == 3)
    }
}
