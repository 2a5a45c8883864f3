import Foundation
import Testing

@testable import StallCapture
@testable import StallMonitoring

@testable import StallSymbols
#if canImport(Glibc)
import Glibc
#endif

/// Real stripped binaries with split debug info: the live stack of each variant must name the
/// same functions and lines as the `-g` build, or honestly fall back to module + offset.
@Suite(.serialized) struct DebugFileTests {
    static let fixture = Result { try NativeFixture.c("debuginfo.c", name: "debuginfo") }

    struct Frame: Equatable, CustomStringConvertible {
        var function: String?
        var file: String?
        var line: Int?
        var inlined: [String]
        var approximate: Bool
        var description: String {
            "\(function ?? "?") \(file.map { ($0 as NSString).lastPathComponent } ?? "-"):\(line ?? 0) "
                + "inlined=\(inlined) approx=\(approximate)"
        }
    }

    /// The frames in the fixture's own module, captured live from a process blocked in read().
    func moduleFrames(_ executable: URL, debugDirectories: [String] = []) throws -> [SymbolizedFrame] {
        let process = try FixtureProcess([], executable: executable)
        defer { process.stop() }
        // Until it is inside read(), the stack is not the one to compare.
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            let wchan = (try? String(contentsOfFile: "/proc/\(process.pid)/wchan", encoding: .utf8)) ?? ""
            if wchan.contains("pipe_read") || wchan.contains("pipe") { break }
            usleep(10_000)
        }
        let inspector = try ProcessInspector(pid: process.pid, debugDirectories: debugDirectories)
        let dump = try inspector.dump(tid: process.pid)
        let frames = dump.frames.filter { $0.modulePath == executable.path }
        try #require(!frames.isEmpty, "no frame in \(executable.lastPathComponent): \(dump.frames.map(\.displayName))")
        return frames
    }

    func summary(_ frames: [SymbolizedFrame]) -> [Frame] {
        frames.map {
            Frame(
                function: $0.function, file: $0.file.map { ($0 as NSString).lastPathComponent }, line: $0.line,
                inlined: $0.inlined.map { "\($0.function ?? "?")@\($0.line ?? 0)" }, approximate: $0.approximate)
        }
    }

    @Test func unstrippedBuildHasNamesLinesAndInlines() throws {
        let fixture = try Self.fixture.get()
        let readLine = try NativeFixture.line(of: "LINE_READ", in: "debuginfo.c")
        let callLine = try NativeFixture.line(of: "LINE_CALL", in: "debuginfo.c")
        let frames = try moduleFrames(fixture.unstripped)
        let worker = try #require(frames.first { $0.function == "process_requests" }, "\(summary(frames))")
        #expect(worker.approximate == false)
        #expect(worker.file?.hasSuffix("debuginfo.c") == true)
        #expect(worker.line == callLine)
        #expect(worker.inlined.map(\.function) == ["wait_for_input"])
        #expect(worker.inlined.first?.line == readLine)
        #expect(worker.inlined.first?.file?.hasSuffix("debuginfo.c") == true)
        #expect(frames.contains { $0.function == "main" && $0.line != nil })
    }

    @Test func strippedWithDebugFileByBuildIDMatchesUnstripped() throws {
        let fixture = try Self.fixture.get()
        let expected = summary(try moduleFrames(fixture.unstripped))
        let actual = summary(try moduleFrames(fixture.strippedByBuildID, debugDirectories: [fixture.debugDirectory.path]))
        #expect(actual == expected)
    }

    @Test func strippedWithDebugLinkMatchesUnstripped() throws {
        let fixture = try Self.fixture.get()
        let expected = summary(try moduleFrames(fixture.unstripped))
        let actual = summary(try moduleFrames(fixture.strippedByDebugLink))
        #expect(actual == expected)
    }

    /// Compressed DWARF (as Debian's debug packages ship it) is read through `DwarfSubset`:
    /// the same names, lines and inlined frames as the plain build.
    @Test func compressedDebugSectionsMatchUnstripped() throws {
        let fixture = try Self.fixture.get()
        let compressed = fixture.directory.appendingPathComponent("debuginfo-gz")
        try? FileManager.default.removeItem(at: compressed)
        try NativeFixture.run("objcopy", ["--compress-debug-sections=zlib", fixture.unstripped.path, compressed.path])
        let image = try ElfImage(path: compressed.path)
        #expect(DwarfSubset.make(from: image) != nil, "the fixture's DWARF was not compressed")
        let expected = summary(try moduleFrames(fixture.unstripped))
        #expect(summary(try moduleFrames(compressed)) == expected)
    }

    /// A damaged compressed .debug_info (inflating fails part-way) costs the lines, not the
    /// names, and nothing crashes.
    @Test func corruptCompressedDebugInfoKeepsNames() throws {
        let fixture = try Self.fixture.get()
        let compressed = fixture.directory.appendingPathComponent("debuginfo-gz-corrupt")
        try? FileManager.default.removeItem(at: compressed)
        try NativeFixture.run("objcopy", ["--compress-debug-sections=zlib", fixture.unstripped.path, compressed.path])
        var bytes = try Data(contentsOf: compressed)
        let image = try ElfImage(path: compressed.path)
        let info = try #require(image.section(named: ".debug_info"))
        let start = info.baseAddress! - image.fileBytes.baseAddress!
        // Past the Elf64_Chdr and zlib header: garbage in the deflate stream.
        for index in (start + 40)..<min(start + info.count, start + 240) { bytes[index] ^= 0x5a }
        try bytes.write(to: compressed)
        let frames = try moduleFrames(compressed)
        #expect(frames.contains { $0.function == "process_requests" }, "\(summary(frames))")
    }

    /// This machine's libc and the path of its libc6-dbg debug file (the test is cancelled
    /// without one).
    static func libcWithDebugFile() throws -> (image: ElfImage, debugPath: String) {
        let image = try ElfImage(path: "/usr/lib/x86_64-linux-gnu/libc.so.6")
        let buildID = try #require(image.buildID)
        let debugPath = "/usr/lib/debug/.build-id/\(buildID.prefix(2))/\(buildID.dropFirst(2)).debug"
        guard FileManager.default.fileExists(atPath: debugPath) else { try Test.cancel("no debug file for libc (apt-get install libc6-dbg)") }
        return (image, debugPath)
    }

    /// `count` addresses spread at random (seeded) over the image's largest code segment.
    static func codeAddresses(in image: ElfImage, count: Int, seed: UInt64) throws -> [UInt64] {
        let text = try #require(image.segments.filter(\.executable).max { $0.memorySize < $1.memorySize })
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { _ in text.virtualAddress + UInt64.random(in: 0..<text.memorySize, using: &generator) }
    }

    /// The subset gives libdw what it reads for lines and inlines: over libc's code, every
    /// lookup through it equals one through the whole (compressed) debug file.
    @Test func libcDwarfSubsetAnswersLikeTheWholeFile() throws {
        let (image, debugPath) = try Self.libcWithDebugFile()
        let debug = try ElfImage(path: debugPath)
        // A unit near the start is read without inflating the rest of .debug_info.
        let early = try #require(DwarfSourceInfo(image: debug))
        let start = try #require(image.address(ofSymbol: "__libc_start_main"))
        #expect(early.locate(start + 4)?.line != nil)
        let inflated = try #require(early.infoInflated)
        #expect(inflated.bytes < inflated.of / 10, "\(inflated)")

        let subset = try #require(DwarfSourceInfo(image: debug))
        let whole = try #require(DwarfSourceInfo(image: debug, subset: false))
        var withLines = 0
        for address in try Self.codeAddresses(in: image, count: 400, seed: 14) {
            let a = subset.locate(address)
            let b = whole.locate(address)
            #expect(
                a?.file == b?.file && a?.line == b?.line && a?.inlined == b?.inlined && a?.function == b?.function
                    && a?.functionStart == b?.functionStart, "\(String(address, radix: 16))")
            if a?.line != nil { withLines += 1 }
        }
        #expect(withLines > 200)
    }

    /// Names without lines (the monitor's loop frames): the same function, offset and
    /// approximation as a full lookup, and no file, line or inlined frames.
    @Test func lookupNameNamesLikeTheFullLookup() throws {
        let (image, debugPath) = try Self.libcWithDebugFile()
        let names = ModuleSymbols(image: image, debugImage: try ElfImage(path: debugPath))
        let full = ModuleSymbols(image: image, debugImage: try ElfImage(path: debugPath))
        var named = 0
        for address in try Self.codeAddresses(in: image, count: 300, seed: 21) {
            let a = names.lookupName(address)
            let b = full.lookup(address)
            #expect(a.function == b.function && a.offset == b.offset && a.approximate == b.approximate, "\(String(address, radix: 16))")
            #expect(a.file == nil && a.line == nil && a.inlined.isEmpty)
            if a.function != nil { named += 1 }
        }
        #expect(named > 250)
    }

    @Test func strippedWithoutDebugFileFallsBackToModuleOffset() throws {
        let fixture = try Self.fixture.get()
        let frames = try moduleFrames(fixture.strippedBare)
        #expect(!frames.contains { $0.function == "process_requests" && !$0.approximate })
        #expect(frames.allSatisfy { $0.file == nil && $0.inlined.isEmpty })
        #expect(frames.allSatisfy { $0.buildId == fixture.buildID && $0.moduleOffset != nil })
    }

    @Test func debugFileWithAnotherBuildIDIsRejected() throws {
        let fixture = try Self.fixture.get()
        // Another build of the same program (different build-id) placed under this build's id.
        let other = try NativeFixture.c("debuginfo.c", name: "other", flags: ["-g", "-O1", "-DOTHER_BUILD=1", "-fno-inline"])
        defer { other.remove() }
        let directory = fixture.directory.appendingPathComponent("wrong-debug")
        let slot = directory.appendingPathComponent(".build-id/\(fixture.buildID.prefix(2))")
        try FileManager.default.createDirectory(at: slot, withIntermediateDirectories: true)
        try? FileManager.default.copyItem(
            at: other.debugFile, to: slot.appendingPathComponent("\(fixture.buildID.dropFirst(2)).debug"))
        let image = try ElfImage(path: fixture.strippedByBuildID.path)
        let locator = DebugFileLocator(systemDirectories: [], extraDirectories: [directory.path])
        #expect(locator.debugImage(for: image, modulePath: fixture.strippedByBuildID.path, cache: ElfImageCache()) == nil)
        // And the right one is found by the same locator in the right directory.
        let good = DebugFileLocator(systemDirectories: [], extraDirectories: [fixture.debugDirectory.path])
        #expect(good.debugImage(for: image, modulePath: fixture.strippedByBuildID.path, cache: ElfImageCache()) != nil)
    }

    @Test func debugLinkWithWrongCRCIsRejected() throws {
        let fixture = try Self.fixture.get()
        let directory = fixture.directory.appendingPathComponent("crc")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let binary = directory.appendingPathComponent("debuginfo-link")
        try FileManager.default.copyItem(at: fixture.strippedByDebugLink, to: binary)
        // Same name, same build-id, different bytes: a debug file rebuilt with other flags.
        var bytes = try Data(contentsOf: fixture.debugFile)
        bytes.append(contentsOf: [0, 0, 0, 0])
        try bytes.write(to: directory.appendingPathComponent("debuginfo.debug"))
        let image = try ElfImage(path: binary.path)
        let locator = DebugFileLocator(systemDirectories: [])
        #expect(locator.debugImage(for: image, modulePath: binary.path, cache: ElfImageCache()) == nil)
        try FileManager.default.removeItem(at: directory.appendingPathComponent("debuginfo.debug"))
        try FileManager.default.copyItem(at: fixture.debugFile, to: directory.appendingPathComponent("debuginfo.debug"))
        #expect(locator.debugImage(for: image, modulePath: binary.path, cache: ElfImageCache()) != nil)
    }

    /// Debian's libc has only .dynsym; libc6-dbg adds a build-id debug file (scripts/setup).
    @Test func libcNamesComeFromItsDebugFile() throws {
        let libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
        let image = try ElfImage(path: libc)
        let buildID = try #require(image.buildID)
        let debugPath = "/usr/lib/debug/.build-id/\(buildID.prefix(2))/\(buildID.dropFirst(2)).debug"
        guard FileManager.default.fileExists(atPath: debugPath) else { try Test.cancel("no debug file for libc (apt-get install libc6-dbg)") }
        let symbols = DebugFileLocator().symbols(for: image, modulePath: libc, cache: ElfImageCache())
        #expect(symbols.debugImage != nil)
        #expect(symbols.hasFullSymbols)
        let read = try #require(image.address(ofSymbol: "read"))
        let lookup = symbols.lookup(read + 4)
        #expect(lookup.approximate == false)
        #expect(lookup.file != nil && lookup.line != nil)
    }
}
