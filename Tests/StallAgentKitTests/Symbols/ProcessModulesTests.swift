import Foundation
import Testing

@testable import StallAgentKit

#if canImport(Glibc)
import Glibc
#endif

@Suite struct ProcessModulesTests {
    /// A library file mapped a second time as data (as this agent does to read symbols, or a
    /// program that mmaps files) must not be taken for the loaded copy.
    @Test func dataMappingOfALibraryIsNotTheModule() throws {
        let libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
        guard FileManager.default.fileExists(atPath: libc) else { return }
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
}
