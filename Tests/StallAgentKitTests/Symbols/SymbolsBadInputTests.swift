import Foundation
import Testing

@testable import StallCapture

@testable import StallSymbols
#if canImport(Glibc)
import Glibc
#endif

/// MiniDebugInfo, and files that are broken in the ways real ones are: truncated, corrupt,
/// enormous. Nothing may crash or hang; lookups fall back to module + offset.
@Suite(.serialized) struct SymbolsBadInputTests {
    func symbols(_ path: String, directories: [String] = []) throws -> ModuleSymbols {
        let image = try ElfImage(path: path)
        return DebugFileLocator(systemDirectories: [], extraDirectories: directories)
            .symbols(for: image, modulePath: path, cache: ElfImageCache())
    }

    func address(of name: String, in path: String) throws -> UInt64 {
        try #require(try ElfImage(path: path).address(ofSymbol: name), "\(name) not in \(path)")
    }

    @Test func miniDebugInfoNamesStaticFunctionsOfAStrippedBinary() throws {
        let fixture = try DebugFileTests.fixture.get()
        let mini = try fixture.makeMiniDebugInfo()
        let target = try address(of: "process_requests", in: fixture.unstripped.path) + 8
        let bare = try symbols(fixture.strippedBare.path).lookup(target)
        #expect(bare.function != "process_requests")
        let withMini = try symbols(mini.path)
        #expect(withMini.hasFullSymbols)
        let lookup = withMini.lookup(target)
        #expect(lookup.function == "process_requests")
        #expect(lookup.approximate == false)
        #expect(lookup.file == nil)  // MiniDebugInfo has no DWARF
    }

    /// A stripped library with `.dynsym` only: an address inside an exported function's size
    /// is that function; one in the gap where a static function was is not named after a
    /// neighbour.
    @Test func dynsymOnlyNamesAreApproximate() throws {
        let fixture = try DebugFileTests.fixture.get()
        let directory = fixture.directory.appendingPathComponent("lib")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let source = directory.appendingPathComponent("lib.c")
        try """
        __attribute__((noinline)) static int hidden(int x) { return x * 3 + 1; }
        int exported(int x) { return hidden(x) + 2; }
        """.write(to: source, atomically: true, encoding: .utf8)
        let library = directory.appendingPathComponent("lib.so")
        try NativeFixture.run("cc", ["-O1", "-shared", "-fPIC", "-o", library.path, source.path])
        let full = try symbols(library.path)
        let hidden = try address(of: "hidden", in: library.path)
        #expect(full.lookup(hidden + 1).function == "hidden")
        #expect(full.lookup(hidden + 1).approximate == false)
        let stripped = directory.appendingPathComponent("lib-stripped.so")
        try NativeFixture.run("strip", ["-o", stripped.path, library.path])
        let guess = try symbols(stripped.path).lookup(hidden + 1)
        #expect(guess.function == nil, "\(guess)")
        let exported = try symbols(stripped.path).lookup(try address(of: "exported", in: library.path))
        #expect(exported.function == "exported" && !exported.approximate)
    }

    @Test func truncatedAndCorruptFilesNeverCrash() throws {
        let fixture = try DebugFileTests.fixture.get()
        let original = try Data(contentsOf: fixture.unstripped)
        let target = try address(of: "process_requests", in: fixture.unstripped.path) + 8
        let directory = fixture.directory.appendingPathComponent("corrupt")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var rng = SplitMix64(seed: 0xbad_e1f)
        var variants: [Data] = [64, 1000, original.count / 3, original.count / 2, original.count - 100].map {
            original.prefix($0)
        }
        for _ in 0..<60 {
            var bytes = original
            for _ in 0..<(1 + rng.next() % 64) {
                bytes[Int(rng.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: rng.next())
            }
            variants.append(bytes)
        }
        let start = Date()
        for (index, bytes) in variants.enumerated() {
            let path = directory.appendingPathComponent("v\(index)").path
            try bytes.write(to: URL(fileURLWithPath: path))
            guard let image = try? ElfImage(path: path) else { continue }
            let symbols = DebugFileLocator(systemDirectories: []).symbols(for: image, modulePath: path, cache: ElfImageCache())
            for probe in [target, 0, 0x1000, UInt64.max - 1] { _ = symbols.lookup(probe) }
        }
        #expect(Date().timeIntervalSince(start) < 30)
    }

    /// Bytes flipped inside the DWARF sections only, so libdw (not libelf) meets the damage.
    @Test func corruptDwarfNeverCrashes() throws {
        let fixture = try DebugFileTests.fixture.get()
        let target = try address(of: "process_requests", in: fixture.unstripped.path) + 8
        let image = try ElfImage(path: fixture.debugFile.path)
        let base = try #require(image.fileBytes.baseAddress)
        var ranges: [Range<Int>] = []
        for name in [".debug_info", ".debug_line", ".debug_abbrev"] {
            if let section = image.section(named: name), let start = section.baseAddress {
                ranges.append((start - base)..<(start - base + section.count))
            }
        }
        try #require(!ranges.isEmpty)
        let original = try Data(contentsOf: fixture.debugFile)
        let directory = fixture.directory.appendingPathComponent("corrupt-dwarf")
        let slot = directory.appendingPathComponent(".build-id/\(fixture.buildID.prefix(2))")
        try FileManager.default.createDirectory(at: slot, withIntermediateDirectories: true)
        var rng = SplitMix64(seed: 0xd3a7_f00d)
        for round in 0..<40 {
            var bytes = original
            for _ in 0..<(1 + rng.next() % 16) {
                let range = ranges[Int(rng.next() % UInt64(ranges.count))]
                guard !range.isEmpty else { continue }
                bytes[range.lowerBound + Int(rng.next() % UInt64(range.count))] = UInt8(truncatingIfNeeded: rng.next())
            }
            let path = slot.appendingPathComponent("\(fixture.buildID.dropFirst(2)).debug")
            try? FileManager.default.removeItem(at: path)
            try bytes.write(to: path)
            _ = round
            let symbols = try symbols(fixture.strippedByBuildID.path, directories: [directory.path])
            _ = symbols.lookup(target)
        }
    }

    /// 200 000 functions: loads in bounded time, and lookups are exact.
    @Test func hugeSymbolTableLoadsAndLooksUp() throws {
        let fixture = try DebugFileTests.fixture.get()
        let directory = fixture.directory.appendingPathComponent("huge")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let count = 200_000
        var assembly = ".text\n"
        assembly.reserveCapacity(count * 60)
        for i in 0..<count {
            assembly += ".globl f\(i)\n.type f\(i), @function\nf\(i):\n.byte 0xc3,0x90,0x90,0x90\n.size f\(i), 4\n"
        }
        let source = directory.appendingPathComponent("huge.s")
        try assembly.write(to: source, atomically: true, encoding: .utf8)
        let library = directory.appendingPathComponent("huge.so")
        try NativeFixture.run("cc", ["-shared", "-nostdlib", "-o", library.path, source.path])
        let start = Date()
        let symbols = try symbols(library.path)
        let f123 = try address(of: "f123456", in: library.path)
        let lookup = symbols.lookup(f123 + 2)
        #expect(lookup.function == "f123456" && lookup.offset == 2 && !lookup.approximate)
        #expect(Date().timeIntervalSince(start) < 20)
    }

    @Test func debugLinkAndMiniDebugInfoReadersSurviveFuzzing() {
        var rng = SplitMix64(seed: 0x11_4e4b)
        // A real xz stream to mutate.
        let fixture = try? DebugFileTests.fixture.get()
        var xz: [UInt8] = []
        if let fixture, let mini = try? fixture.makeMiniDebugInfo(), let image = try? ElfImage(path: mini.path),
            let section = image.section(named: ".gnu_debugdata")
        {
            xz = Array(section)
            #expect(MiniDebugInfo.decompress(section) != nil)
        }
        let deadline = Date().addingTimeInterval(4)
        var rounds = 0
        while Date() < deadline && rounds < 400 {
            let length = Int(rng.next() % 64)
            var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if rng.next() % 2 == 0 { bytes = Array("name.debug".utf8) + [0] + bytes }
            bytes.withUnsafeBytes { raw in
                if let link = DebugLink.parse(raw) { #expect(!link.fileName.contains("/")) }
            }
            if !xz.isEmpty {
                var mutated = xz
                switch rng.next() % 3 {
                case 0: mutated = Array(mutated.prefix(Int(rng.next() % UInt64(mutated.count))))
                default:
                    for _ in 0..<(1 + rng.next() % 8) {
                        mutated[Int(rng.next() % UInt64(mutated.count))] = UInt8(truncatingIfNeeded: rng.next())
                    }
                }
                mutated.withUnsafeBytes { _ = MiniDebugInfo.decompress($0, limit: 1 << 20) }
            }
            rounds += 1
        }
        #expect(rounds > 20)
    }
}
