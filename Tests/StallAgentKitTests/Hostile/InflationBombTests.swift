import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 27, item 1: decompression bombs. A target's owner ships libraries whose compressed
/// debug information inflates to far more than the file: a `.debug_info` of 900 MB of zeros
/// in 0.9 MB of zlib (SHF_COMPRESSED), and a `.gnu_debugdata` of 128 MB of zeros in ~32 KB of
/// xz. With a limit per section and per module only, four such libraries on one stalled
/// stack took the root agent past 1 GB. One budget for the whole agent keeps it within
/// 100 MB of what the same watch costs without the bombs, and the stall is still reported.
@Suite(.serialized) struct InflationBombTests {
    static let library = """
        void bomb_N(void (*next)(void)) {
            next();
            __asm__ volatile("" ::: "memory");  /* no tail call: this frame stays on the stack */
        }
        """

    static let program = """
        #include <stdio.h>
        #include <sys/epoll.h>
        #include <unistd.h>
        void bomb_1(void (*)(void));
        void bomb_2(void (*)(void));
        void bomb_3(void (*)(void));
        void bomb_4(void (*)(void));
        static void sleep_in_handler(void) { usleep(2500000); }
        static void via_4(void) { bomb_4(sleep_in_handler); }
        static void via_3(void) { bomb_3(via_4); }
        static void via_2(void) { bomb_2(via_3); }
        int main(void) {
            int ep = epoll_create1(0);
            struct epoll_event event;
            printf("ready\\n");
            fflush(stdout);
            for (;;) {
                for (int i = 0; i < 10; i++) epoll_wait(ep, &event, 1, 100);
                bomb_1(via_2);
            }
        }
        """

    /// Replaces `.debug_info` by a zlib stream of `megabytes` MB of zeros (a raw deflate block
    /// after a full flush is the same for every megabyte, so the stream is built, not
    /// compressed) and hides `.debug_aranges`, so every byte of it is wanted.
    static let dwarfBomb = """
        import struct, sys, zlib
        path, megabytes = sys.argv[1], int(sys.argv[2])
        data = bytearray(open(path, "rb").read())
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
        header = lambda i: shoff + i * shentsize
        strings = struct.unpack_from("<Q", data, header(shstrndx) + 24)[0]
        def name(i):
            start = strings + struct.unpack_from("<I", data, header(i))[0]
            return bytes(data[start:data.index(0, start)]).decode(), start
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        megabyte = bytes(1 << 20)
        first = compressor.compress(megabyte) + compressor.flush(zlib.Z_FULL_FLUSH)
        repeated = compressor.compress(megabyte) + compressor.flush(zlib.Z_FULL_FLUSH)
        end = compressor.flush(zlib.Z_FINISH)
        size = megabytes << 20
        adler = ((size % 65521) << 16) | 1
        stream = b"\\x78\\xda" + first + repeated * (megabytes - 1) + end + struct.pack(">I", adler)
        assert zlib.decompressobj().decompress(stream[:4096], 1 << 16) == bytes(1 << 16)
        blob = struct.pack("<IIQQ", 1, 0, size, 1) + stream
        for i in range(shnum):
            section, start = name(i)
            if section == ".debug_aranges":
                data[start + 1] = ord("x")
            if section == ".debug_info":
                data += bytes(-len(data) % 8)
                struct.pack_into("<Q", data, header(i) + 8, struct.unpack_from("<Q", data, header(i) + 8)[0] | 0x800)
                struct.pack_into("<QQ", data, header(i) + 24, len(data), len(blob))
                data += blob
        open(path, "wb").write(data)
        """

    let scratch: HostileScratch

    init() throws { scratch = try HostileScratch("bombs") }

    /// Builds the program and its four libraries; `bombs`: libraries 1–2 get the DWARF bomb,
    /// 3–4 are stripped and get the xz one.
    func build(_ name: String, bombs: Bool) throws -> String {
        let directory = scratch.path(name)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let cc = try NativeFixture.tool("cc")
        for index in 1...4 {
            let source = directory + "/bomb\(index).c"
            try Self.library.replacingOccurrences(of: "bomb_N", with: "bomb_\(index)").write(
                toFile: source, atomically: true, encoding: .utf8)
            let library = directory + "/libbomb\(index).so"
            try NativeFixture.run("cc", ["-g", "-O1", "-fPIC", "-shared", "-o", library, source])
            guard bombs else { continue }
            if index <= 2 {
                try Self.dwarfBomb.write(toFile: scratch.path("dwarf_bomb.py"), atomically: true, encoding: .utf8)
                let result = try runCommand(URL(fileURLWithPath: "/usr/bin/python3"), [scratch.path("dwarf_bomb.py"), library, "900"], timeout: 60)
                try #require(result.status == 0, "\(result.stderr)")
            } else {
                try NativeFixture.run("strip", ["--strip-all", library])
                try NativeFixture.run("objcopy", ["--add-section", ".gnu_debugdata=\(xzBomb())", library])
            }
        }
        try Self.program.write(toFile: directory + "/main.c", atomically: true, encoding: .utf8)
        let program = directory + "/victim"
        let result = try runCommand(
            cc,
            ["-g", "-O1", "-o", program, directory + "/main.c", "-L", directory, "-lbomb1", "-lbomb2", "-lbomb3", "-lbomb4", "-Wl,-rpath," + directory],
            timeout: 60)
        try #require(result.status == 0, "\(result.stderr)")
        return program
    }

    /// 128 MB of zeros in xz, made once per run.
    func xzBomb() throws -> String {
        let path = scratch.path("zeros.xz")
        if FileManager.default.fileExists(atPath: path) { return path }
        let result = try runCommand(
            URL(fileURLWithPath: "/bin/sh"), ["-c", "head -c 128M /dev/zero | xz -0 -T0 -C none > '\(path)'"], timeout: 120)
        try #require(result.status == 0, "\(result.stderr)")
        return path
    }

    /// Watches `program` 8 s (two 2.5 s stalls); returns the agent's stderr and its peak RSS in MB.
    func watch(_ program: String, name: String) throws -> (stderr: String, peakMB: Double) {
        let target = try ReadyProgram(program)
        defer { target.stop() }
        let agent = try BackgroundAgent(
            ["--pid", "\(target.pid)", "--report-dir", scratch.path(name + "-reports"), "--duration", "8s"],
            stderrPath: scratch.path(name + ".stderr"))
        let exit = agent.waitForExit(timeout: 60)
        #expect(exit?.status == 0, "\(agent.stderr)")
        let stderr = agent.stderr
        let peak =
            stderr.split(separator: "\n").first { $0.contains("peak RSS") }
            .flatMap { line -> Double? in
                guard let range = line.range(of: "peak RSS ") else { return nil }
                return Double(line[range.upperBound...].split(separator: " ").first ?? "")
            } ?? 0
        return (stderr, peak)
    }

    @Test(.tags(.hostile), .enabled(if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs root and /usr/bin/python3"))
    func attack9_decompressionBombsStayWithinTheAgentsBudget() throws {
        let clean = try watch(try build("clean", bombs: false), name: "clean")
        let bombed = try watch(try build("bombed", bombs: true), name: "bombed")
        for run in [clean, bombed] {
            let stalls = run.stderr.split(separator: "\n").filter { $0.hasPrefix("stall #") }
            #expect(!stalls.isEmpty && stalls.allSatisfy { $0.contains(" blocked ") }, "\(run.stderr)")
            #expect(run.peakMB > 0, "\(run.stderr)")
        }
        print("bombs: agent peak RSS \(clean.peakMB) MB without them, \(bombed.peakMB) MB with them")
        #expect(bombed.peakMB <= clean.peakMB + 100, "clean \(clean.peakMB) MB, bombed \(bombed.peakMB) MB")
        // Each bombed library is named once, and the bomb-free ones never.
        for index in 1...4 {
            let notices = bombed.stderr.split(separator: "\n").filter { $0.contains("libbomb\(index).so") && $0.contains("inflation budget") }
            #expect(notices.count == 1, "libbomb\(index).so: \(bombed.stderr)")
        }
        #expect(!clean.stderr.contains("inflation budget"), "\(clean.stderr)")
    }
}
