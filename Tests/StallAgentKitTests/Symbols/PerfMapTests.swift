import Foundation
import Testing

@testable import StallCapture
@testable import StallMonitoring

@testable import StallSymbols
#if canImport(Glibc)
import Glibc
#endif

@Suite struct PerfMapTests {
    @Test func parsesValidLinesAndSkipsGarbage() {
        let map = PerfMap(
            text: """
                not a line
                7f0000001000 40 LazyCompile:*render app.js:10
                0x7f0000002000 0x10 Interpreter
                zz 10 bad
                7f0000003000 0 zero_size
                ffffffffffffffff ffff overflow
                7f0000004000 20
                7f0000001000 20 LazyCompile:*renderAgain app.js:10\r
                """)
        #expect(map.entries.count == 2)
        #expect(map.lookup(0x7f0000001010)?.name == "LazyCompile:*renderAgain app.js:10")
        // Past the newer, shorter entry: nothing (the older one was replaced).
        #expect(map.lookup(0x7f0000001030) == nil)
        #expect(map.lookup(0x7f000000200f)?.name == "Interpreter")
        #expect(map.lookup(0x7f0000002010) == nil)
        #expect(map.lookup(0x1000) == nil)
    }

    /// A JIT appends: only the new lines are read and merged (a later line wins at its start),
    /// a line still being written waits for its newline, and a rewritten file is read anew.
    @Test func appendedLinesAreMergedAndARewriteIsReadAgain() throws {
        let path = "/tmp/perf-\(getpid()).map"
        defer { unlink(path) }
        func append(_ text: String) throws {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(text.utf8))
        }
        try "1000 10 first\n2000 10 second\n".write(toFile: path, atomically: false, encoding: .utf8)
        let file = PerfMapFile(pid: getpid())
        #expect(file.current()?.lookup(0x1008)?.name == "first")
        usleep(10_000)  // a new mtime
        try append("1000 20 first again\n3000 10 thi")
        var map = try #require(file.current())
        #expect(map.lookup(0x1018)?.name == "first again")
        #expect(map.lookup(0x2000)?.name == "second")
        #expect(map.lookup(0x3000) == nil, "a line without its newline yet")
        usleep(10_000)
        try append("rd\n")
        map = try #require(file.current())
        #expect(map.lookup(0x3004)?.name == "third")
        #expect(map.slots.count == 3)
        usleep(10_000)
        try "4000 10 fourth\n".write(toFile: path, atomically: true, encoding: .utf8)
        map = try #require(file.current())
        #expect(map.lookup(0x1008) == nil)
        #expect(map.lookup(0x4008)?.name == "fourth")
        // Rewritten in place, same file and longer: not taken for an append.
        usleep(10_000)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.write(contentsOf: Data("5000 10 fifth\n6000 10 sixth\n".utf8))
        try handle.close()
        map = try #require(file.current())
        #expect(map.lookup(0x4008) == nil)
        #expect(map.lookup(0x5008)?.name == "fifth" && map.lookup(0x6008)?.name == "sixth")
    }

    /// Fixed-seed random and mutated input: never crashes, every hit really contains the address.
    @Test func fuzzedInputNeverCrashes() {
        var rng = SplitMix64(seed: 0x9e4f_0004)
        let alphabet = Array("0123456789abcdefxX \n\t:*zZ-_.\r".utf8)
        let deadline = Date().addingTimeInterval(2)
        var rounds = 0
        while Date() < deadline && rounds < 2000 {
            let length = Int(rng.next() % 400)
            let bytes = (0..<length).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
            let map = PerfMap(text: Substring(String(decoding: bytes, as: UTF8.self)))
            for _ in 0..<20 {
                let address = rng.next() % 0x10000
                if let hit = map.lookup(address) {
                    #expect(address >= hit.start && address - hit.start < hit.size)
                }
            }
            rounds += 1
        }
        #expect(rounds > 50)
    }

    /// A real process generates code at run time and names it in its perf map.
    @Test func jitFrameIsNamedFromTheTargetsPerfMap() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stallagent-jit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let binary = directory.appendingPathComponent("jit")
        try NativeFixture.run("cc", ["-O1", "-o", binary.path, NativeFixture.sourceURL("jit.c").path])
        let process = try FixtureProcess([], executable: binary)
        defer {
            process.stop()
            unlink("/tmp/perf-\(process.pid).map")
        }
        try #require(KernelState.waitUntilSpinning(process.pid), "never ran its JIT loop")
        let dump = try ProcessInspector(pid: process.pid).dump(tid: process.pid)
        let top = try #require(dump.frames.first)
        #expect(top.function == "LazyCompile:*hotLoop app.js:42", "\(dump.frames.map(\.displayName))")
        #expect(top.module == nil && top.approximate == false)
        #expect((top.functionOffset ?? 99) < 4)
    }
}
