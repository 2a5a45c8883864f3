import Foundation
import Testing

@testable import StallCapture

@testable import StallSymbols
#if canImport(Glibc)
import Glibc
#endif

@Suite struct ProcessModulesTests {
    /// A library file mapped a second time as data (as this agent does to read symbols, or a
    /// program that mmaps files) must not be taken for the loaded copy.
    @Test func dataMappingOfALibraryIsNotTheModule() throws {
        let libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
        guard FileManager.default.fileExists(atPath: libc) else { try Test.cancel("\(libc) is missing") }
        let maps = """
            7fadde2f4000-7fadde4cb000 rw-p 00000000 fe:00 333151                     \(libc)
            7fade0c1e000-7fade0c44000 r--p 00000000 fe:00 333151                     \(libc)
            7fade0c44000-7fade0d9a000 r-xp 00026000 fe:00 333151                     \(libc)
            7fade0d9a000-7fade0ded000 r--p 0017c000 fe:00 333151                     \(libc)
            7fade0ded000-7fade0df1000 r--p 001cf000 fe:00 333151                     \(libc)
            7fade0df1000-7fade0df3000 rw-p 001d3000 fe:00 333151                     \(libc)
            """
        let modules = try ProcessModules(pid: getpid(), mapsText: maps)
        #expect(modules.modules.count == 1)
        let module = try #require(modules.module(containing: 0x7fade0c50000))
        #expect(module.bias == 0x7fade0c1e000)
        #expect(modules.module(containing: 0x7fadde300000) == nil)
        #expect(module.image?.symbol(forVirtualAddress: module.moduleOffset(of: 0x7fade0c50000)) != nil)
    }

    /// Debian's redis-server is a symlink to redis-check-rdb; frames must carry the name the
    /// user ran, while the path (for reading symbols) stays the mapped file.
    @Test func executableStartedThroughASymlinkIsNamedByTheLink() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("alias-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let real = directory.appendingPathComponent("fixture-real")
        try FileManager.default.copyItem(at: FixtureProcess.executableURL, to: real)
        let link = directory.appendingPathComponent("my-server")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "fixture-real")
        let process = try FixtureProcess(["idle"], executable: link)
        defer { process.stop() }
        let modules = try ProcessModules(pid: process.pid)
        let main = try #require(modules.modules.first { $0.path == real.path })
        #expect(main.name == "my-server")
        #expect(modules.modules.filter { $0.path != real.path }.allSatisfy { $0.alias == nil })

        // A file merely named like the process, but not a link to it, is not an alias.
        let direct = try FixtureProcess(["idle"], executable: real)
        defer { direct.stop() }
        let plain = try #require(try ProcessModules(pid: direct.pid).modules.first { $0.path == real.path })
        #expect(plain.name == "fixture-real")
    }
}
