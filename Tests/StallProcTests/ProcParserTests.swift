import Foundation
import Testing

@testable import StallProc

@Suite struct ProcParserTests {
    @Test func statWithParenthesesAndSpacesInName() throws {
        let line =
            "4242 (my (weird) name) S 1 4242 4242 0 -1 4194560 150 0 0 0 12 34 0 0 20 0 3 0 98765 1000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
        let stat = try #require(ProcThreadStat.parse(line))
        #expect(stat.name == "my (weird) name")
        #expect(stat.state == "S")
        #expect(stat.ppid == 1)
        #expect(stat.userTicks == 12)
        #expect(stat.systemTicks == 34)
        #expect(stat.startTicks == 98765)
        #expect(stat.processor == 1)
        #expect(stat.flags == 4194560)
        #expect(!stat.isExiting)
    }

    /// PF_EXITING (0x4) in field 9: the kernel then refuses new perf events on the thread
    /// with ENODEV, which must read as "gone", not as "counters unavailable".
    @Test func exitingThreadIsRecognisedByItsFlags() throws {
        let exiting = "77 (sh) S 1 77 77 0 -1 4194564 150 0 0 0 1 1 0 0 20 0 1 0 500 1000 200 0 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
        #expect(try #require(ProcThreadStat.parse(exiting)).isExiting)
        let zombie = "77 (sh) Z 1 77 77 0 -1 4194560 150 0 0 0 1 1 0 0 20 0 1 0 500 0 0 0 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
        #expect(try #require(ProcThreadStat.parse(zombie)).isExiting)
    }

    /// The byte parser against a plain split of the same line, for every thread on this
    /// machine and for names with spaces, parentheses, a newline and non-ASCII letters.
    @Test func statByteParserAgreesWithASplitOfTheLine() throws {
        func reference(_ text: String) -> ProcThreadStat? {
            guard let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")") else { return nil }
            let rest = text[text.index(after: close)...].split(whereSeparator: { $0 == " " || $0 == "\n" })
            func field(_ n: Int) -> Substring? { n - 3 < rest.count ? rest[n - 3] : nil }
            guard let state = field(3)?.first, let ppid = field(4).flatMap({ Int32($0) }),
                let utime = field(14).flatMap({ UInt64($0) }), let stime = field(15).flatMap({ UInt64($0) }),
                let start = field(22).flatMap({ UInt64($0) })
            else { return nil }
            return ProcThreadStat(
                state: state, name: String(text[text.index(after: open)..<close]), ppid: ppid, userTicks: utime,
                systemTicks: stime, startTicks: start, processor: field(39).flatMap { Int32($0) } ?? -1,
                flags: field(9).flatMap { UInt64($0) } ?? 0, exitCode: field(52).flatMap { Int32($0) },
                startStack: field(28).flatMap { UInt64($0) })
        }
        var lines: [String] = []
        for name in ["a b", "x) R 1 (y", "two\nlines", "résumé ✓", ""] {
            lines.append("99 (\(name)) R 7 99 99 0 -1 4194304 1 2 3 4 5 6 7 8 20 0 1 0 123 4 5 6 7 8 9 10 11 12 13 14 15 16 17 1 0 0 0 0 0\n")
        }
        let fm = FileManager.default
        for pid in (try? fm.contentsOfDirectory(atPath: "/proc")) ?? [] where Int(pid) != nil {
            for tid in (try? fm.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
                if let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/stat", encoding: .utf8) { lines.append(text) }
            }
        }
        #expect(lines.count > 10)
        for line in lines {
            let parsed = ProcThreadStat.parse(line)
            #expect(parsed != nil, "\(line)")
            #expect(parsed == reference(line), "\(line)")
        }
        #expect(ProcThreadStat.parse("1 (a) R 1 1 1 0 -1 0 0 0 0 0 99999999999999999999999 1 0 0 20 0 1 0 5 0 0\n") == nil)
    }

    /// A zombie's stat, read on this machine from a child that called `_exit(3)`: field 52 is
    /// the wait status its parent will get.
    @Test func aZombieSaysHowItEnded() throws {
        let line =
            "375 (python3) Z 334 332 23839 0 -1 4227148 219 0 0 0 0 0 0 0 20 0 1 0 1015502 0 0 18446744073709551615 0 0 0 0 0 0 0 16781312 2 1 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 768\n"
        let stat = try #require(ProcThreadStat.parse(line[...]))
        #expect(stat.state == "Z")
        #expect(stat.exitCode == 3 << 8)
        // A line of an older kernel, without the field, has none.
        #expect(ProcThreadStat.parse("1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 9 10 11\n")?.exitCode == nil)
    }

    @Test func statRejectsGarbage() {
        #expect(ProcThreadStat.parse("") == nil)
        #expect(ProcThreadStat.parse("12 (x") == nil)
        #expect(ProcThreadStat.parse("12 (x) S") == nil)
    }

    @Test func syscallForms() throws {
        #expect(ProcSyscallInfo.parse("running\n") == .running)
        #expect(ProcSyscallInfo.parse("-1 0x7ffd1234 0x7f00abcd\n") == .blockedOutsideSyscall(sp: 0x7ffd1234, pc: 0x7f00abcd))
        let epoll = try #require(ProcSyscallInfo.parse("232 0x4 0x7ffc8ee0e3a0 0x20 0xffffffff 0x0 0x8 0x7ffc8ee0e388 0x7f2b1c0e5ef3\n"))
        #expect(epoll.syscallNumber == 232)
        #expect(epoll.syscallName == "epoll_wait")
        #expect(epoll.stackPointer == 0x7ffc8ee0e388)
        #expect(epoll.programCounter == 0x7f2b1c0e5ef3)
        #expect(ProcSyscallInfo.parse("202 0x1 0x2\n") == nil)
        #expect(ProcSyscallInfo.parse("") == nil)
        #expect(ProcSyscallInfo.name(ofSyscall: 9999) == "syscall_9999")
        #expect(ProcSyscallInfo.number(ofSyscall: "epoll_pwait") == 281)
    }

    @Test func schedstat() throws {
        let s = try #require(ProcSchedstat.parse("123456789 2345 17\n"))
        #expect(s == ProcSchedstat(cpuNanos: 123_456_789, runQueueNanos: 2345, timeslices: 17))
        #expect(ProcSchedstat.parse("12 x 3") == nil)
    }

    @Test func status() throws {
        let text =
            "Name:\tredis-server\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t5521\nNgid:\t0\nPid:\t5522\nPPid:\t1\nTracerPid:\t0\nUid:\t998\t998\t998\t998\nThreads:\t5\nVmSize:\t  100 kB\n"
        let status = try #require(ProcStatus.parse(text))
        #expect(status.name == "redis-server")
        #expect(status.state == "S")
        #expect(status.tgid == 5521)
        #expect(status.pid == 5522)
        #expect(status.realUid == 998)
        #expect(status.threads == 5)
        #expect(status.hasUserMemory)
        let kernel = try #require(ProcStatus.parse("Name:\tkthreadd\nState:\tS (sleeping)\nTgid:\t2\nPid:\t2\nPPid:\t0\n"))
        #expect(!kernel.hasUserMemory)
    }

    @Test func maps() throws {
        let text = """
            55fbfde00000-55fbfde2c000 r--p 00000000 fe:01 1234   /usr/bin/redis server
            55fbfde2c000-55fbfdf00000 r-xp 0002c000 fe:01 1234   /usr/bin/redis server
            7f0000000000-7f0000021000 rw-p 00000000 00:00 0
            7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0      [stack]
            7f1000000000-7f1000001000 r-xp 00000000 fe:01 99     /tmp/lib.so (deleted)
            garbage line
            """
        let entries = MemoryMapEntry.parseAll(text)
        #expect(entries.count == 5)
        #expect(entries[0].path == "/usr/bin/redis server")
        #expect(entries[1].executable && !entries[1].writable)
        #expect(entries[1].fileOffset == 0x2c000)
        #expect(entries[0].isFileBacked)
        #expect(!entries[2].isFileBacked && entries[2].path.isEmpty)
        #expect(entries[3].path == "[stack]")
        #expect(entries[4].isDeleted)
        #expect(entries[1].contains(0x55fbfde2c000) && !entries[1].contains(0x55fbfdf00000))
        let escaped = MemoryMapEntry.parse("7f00-7f01 r-xp 00000000 fe:01 7   /tmp/a\\012b")
        #expect(escaped?.path == "/tmp/a\nb")
        #expect(entries[0].device == "fe:01" && entries[0].inode == 1234 && entries[0].start == 0x55fb_fde0_0000)
        // Parsed as bytes: a number too long for 64 bits is no entry, not a trap.
        #expect(MemoryMapEntry.parse("1ffffffffffffffff-2 r-xp 00000000 fe:01 7 /x") == nil)
        #expect(MemoryMapEntry.parse("7f00-7f01 r-xp 00000000 fe:01 99999999999999999999 /x") == nil)
    }
}
