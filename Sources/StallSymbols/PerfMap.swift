import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// A JIT's symbol file, `/tmp/perf-PID.map` (Node `--perf-basic-prof`, Java perf-map agents,
/// Python `-X perf`): one `START SIZE name` line per generated function, hex numbers. Later
/// lines win where code was regenerated at the same address, as perf does.
///
/// A long-running Node.js server's map grows to tens of megabytes (300 000 lines, 32 MB:
/// parsed as Swift strings that took 1.2 s and 140 MB). Entries are kept as 24-byte slots;
/// the names stay where they are (the file, or the text given) and are read on lookup.
public struct PerfMap: Sendable {
    public struct Entry: Equatable, Sendable {
        public var start: UInt64
        public var size: UInt64
        public var name: String
    }

    /// One line: where its name is, not the name.
    struct Slot {
        var start: UInt64
        var size: UInt32
        var nameOffset: UInt32
        var nameLength: UInt16
        /// Line number: the later line wins at an equal start.
        var order: UInt32
    }

    /// Where names are read from.
    final class Names: Sendable {
        enum Source {
            case bytes([UInt8])
            /// Read with pread on the file-I/O worker (the file may sit on a hung mount).
            case file(Int32)
        }
        let source: Source
        init(_ source: Source) { self.source = source }
        deinit { if case .file(let fd) = source { close(fd) } }

        func name(_ slot: Slot) -> String? {
            let count = Int(slot.nameLength)
            let bytes: [UInt8]?
            switch source {
            case .bytes(let all):
                let start = Int(slot.nameOffset)
                bytes = start + count <= all.count ? Array(all[start..<start + count]) : nil
            case .file(let fd):
                let offset = off_t(slot.nameOffset)
                bytes =
                    BoundedFileIO.shared.run { () -> [UInt8]? in
                        var buffer = [UInt8](repeating: 0, count: count)
                        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, offset) }
                        return n == count ? buffer : nil
                    } ?? nil
            }
            return bytes.map { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// Sorted by start; overlaps resolved in favour of the later line.
    private(set) var slots: [Slot] = []
    let names: Names

    /// Refuses files larger than this (a runaway JIT can write gigabytes).
    public static let maxBytes = 64 << 20
    /// Name bytes kept from a line (the rest is dropped, as perf tools do with huge names).
    static let maxNameBytes = 1024

    /// Lines that are not `hex hex name` (garbage, truncated last line) are skipped.
    public init(text: Substring) {
        let bytes = Array(text.utf8)
        names = Names(.bytes(bytes))
        var parsed: [Slot] = []
        _ = bytes.withUnsafeBytes { Self.parse($0, baseOffset: 0, firstOrder: 0, into: &parsed, final: true) }
        slots = Self.merge([], &parsed)
    }

    /// The entries (for tests; a lookup reads one name).
    public var entries: [Entry] {
        slots.compactMap { slot in names.name(slot).map { Entry(start: slot.start, size: UInt64(slot.size), name: $0) } }
    }

    init(slots: [Slot], names: Names) {
        self.slots = slots
        self.names = names
    }

    /// Parses the complete lines of `bytes` (file offset `baseOffset`) into `slots`, numbering
    /// them from `firstOrder`. Returns how many bytes were consumed: up to the last newline,
    /// or all of them when `final` (a last line without its newline still counts then).
    static func parse(
        _ bytes: UnsafeRawBufferPointer, baseOffset: Int, firstOrder: UInt32, into slots: inout [Slot], final: Bool
    ) -> Int {
        var order = firstOrder
        var lineStart = 0
        let newline = UInt8(ascii: "\n")
        while lineStart < bytes.count {
            var lineEnd = lineStart
            while lineEnd < bytes.count && bytes[lineEnd] != newline { lineEnd += 1 }
            if lineEnd == bytes.count && !final { return lineStart }
            if let slot = parseLine(bytes, from: lineStart, to: lineEnd, baseOffset: baseOffset, order: order) {
                slots.append(slot)
            }
            order &+= 1
            lineStart = lineEnd + 1
        }
        return bytes.count
    }

    static func parseLine(_ bytes: UnsafeRawBufferPointer, from: Int, to end: Int, baseOffset: Int, order: UInt32) -> Slot? {
        let space = UInt8(ascii: " ")
        var index = from
        func field() -> Range<Int>? {
            while index < end && bytes[index] == space { index += 1 }
            let start = index
            while index < end && bytes[index] != space { index += 1 }
            return start < index ? start..<index : nil
        }
        func hex(_ range: Range<Int>) -> UInt64? {
            var digits = range
            if digits.count > 2, bytes[digits.lowerBound] == UInt8(ascii: "0"),
                bytes[digits.lowerBound + 1] | 0x20 == UInt8(ascii: "x")
            {
                digits = digits.lowerBound + 2..<digits.upperBound
            }
            guard !digits.isEmpty, digits.count <= 16 else { return nil }
            var value: UInt64 = 0
            for position in digits {
                let c = bytes[position]
                let digit: UInt8
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = c - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = c - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = c - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt64(digit)
            }
            return value
        }
        guard let startField = field(), let sizeField = field(), let start = hex(startField), let size = hex(sizeField),
            size > 0, start <= UInt64.max - size
        else { return nil }
        while index < end && bytes[index] == space { index += 1 }
        var nameEnd = end
        while nameEnd > index,
            bytes[nameEnd - 1] == space || bytes[nameEnd - 1] == UInt8(ascii: "\t")
                || bytes[nameEnd - 1] == UInt8(ascii: "\r")
        {
            nameEnd -= 1
        }
        guard nameEnd > index, baseOffset + index <= Int(UInt32.max) else { return nil }
        return Slot(
            start: start, size: UInt32(clamping: size), nameOffset: UInt32(baseOffset + index),
            nameLength: UInt16(min(nameEnd - index, maxNameBytes)), order: order)
    }

    /// `old` (sorted, one slot per start) with `new` lines added: a new line replaces an old
    /// one at the same start, and the latest of the new ones wins among themselves. `new` is
    /// sorted and thinned in place: a large map's copies would be most of the agent's RSS.
    static func merge(_ old: [Slot], _ new: inout [Slot]) -> [Slot] {
        new.sort { $0.start != $1.start ? $0.start < $1.start : $0.order > $1.order }
        var kept = 0
        for index in new.indices where kept == 0 || new[kept - 1].start != new[index].start {
            new[kept] = new[index]
            kept += 1
        }
        new.removeLast(new.count - kept)
        guard !old.isEmpty else { return new }
        var merged: [Slot] = []
        merged.reserveCapacity(old.count + new.count)
        var i = 0
        var j = 0
        while i < old.count || j < new.count {
            if j == new.count || (i < old.count && old[i].start < new[j].start) {
                merged.append(old[i])
                i += 1
            } else {
                if i < old.count && old[i].start == new[j].start { i += 1 }
                merged.append(new[j])
                j += 1
            }
        }
        return merged
    }

    public func lookup(_ address: UInt64) -> Entry? {
        let low = slots.countStarting(atOrBelow: address) { $0.start }
        // An earlier, longer entry may still cover the address past a shorter neighbour.
        var index = low - 1
        while index >= 0 && index >= low - 16 {
            let slot = slots[index]
            if address >= slot.start && address - slot.start < UInt64(slot.size) {
                return names.name(slot).map { Entry(start: slot.start, size: UInt64(slot.size), name: $0) }
            }
            index -= 1
        }
        return nil
    }
}

/// The perf map of one process, re-read when the file changes. JITs only append: then just
/// the new lines are parsed and merged in.
package final class PerfMapFile {
    let path: String
    private struct Stamp: Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int
        var modified: Int
        var nanos: Int
    }
    private var stamp: Stamp?
    /// Bytes of the file parsed so far (up to the last complete line), and lines seen.
    private var parsedBytes = 0
    private var lines: UInt32 = 0
    /// The last bytes parsed: still there when the file only grew, not when it was rewritten
    /// in place (a perf-map agent dumping again).
    private var tail: [UInt8] = []
    private(set) var map: PerfMap?

    /// The file is named with the pid as the target sees it (its own pid namespace) and read
    /// through its root, so a JIT in a container is found.
    package init(pid: Int32) {
        path = "/proc/\(pid)/root/tmp/perf-\(PerfMapFile.namespacePID(pid)).map"
    }

    static func namespacePID(_ pid: Int32) -> Int32 {
        guard let text = try? ProcFS.readText("/proc/\(pid)/status", pid: pid),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("NSpid:") }),
            let last = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).last, let value = Int32(last)
        else { return pid }
        return value
    }

    /// Set when the file did not answer in time: the perf map is then given up for good.
    private var hung = false

    private struct Outcome: Sendable {
        var stamp: Stamp?
        var slots: [PerfMap.Slot]?
        var names: PerfMap.Names?
        var parsedBytes = 0
        var lines: UInt32 = 0
        var tail: [UInt8] = []
        var appended = false
    }

    static func read(_ fd: Int32, at offset: Int, count: Int) -> [UInt8]? {
        guard count > 0, offset >= 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: count)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
        return n == count ? buffer : nil
    }

    package func current() -> PerfMap? {
        guard !hung else { return nil }
        // The file belongs to the target's user: it may be a FIFO, a link, huge, or on a
        // mount that hangs. Checked on the descriptor that is read, on the file-I/O worker.
        let path = path
        let previous = stamp
        let (fromBytes, fromLines, fromTail) = (parsedBytes, lines, tail)
        var result = BoundedFileIO.shared.run { () -> Outcome in
            guard let (fd, info) = try? SafeFileReader.openRegularFile(path) else { return Outcome() }
            let now = Stamp(
                device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int(info.st_size),
                modified: Int(info.st_mtim.tv_sec), nanos: Int(info.st_mtim.tv_nsec))
            if let previous, previous == now {
                close(fd)
                return Outcome(stamp: now, parsedBytes: fromBytes, lines: fromLines, appended: true)
            }
            guard info.st_size <= PerfMap.maxBytes else {
                close(fd)
                return Outcome(stamp: now)
            }
            // The same file grown: only its new lines. Anything else: all of it.
            let append =
                (previous.map { $0.device == now.device && $0.inode == now.inode && now.size >= $0.size } ?? false)
                && Self.read(fd, at: fromBytes - fromTail.count, count: fromTail.count) == fromTail
            var offset = append ? fromBytes : 0
            // Generous: capacity never written is never resident, and growing by copies would
            // double the peak.
            var slots: [PerfMap.Slot] = []
            slots.reserveCapacity((now.size - offset) / 24 + 16)
            var outcome = Outcome(stamp: now, slots: slots, names: PerfMap.Names(.file(fd)), appended: append)
            slots = []
            var order = append ? fromLines : 0
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            var carried = 0
            while offset + carried < now.size {
                let want = min(buffer.count - carried, now.size - offset - carried)
                let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + carried, want, off_t(offset + carried)) }
                guard n > 0 else { break }
                let available = carried + n
                let consumed = buffer.withUnsafeBytes { raw in
                    PerfMap.parse(
                        UnsafeRawBufferPointer(rebasing: raw[0..<available]), baseOffset: offset, firstOrder: order,
                        into: &outcome.slots!, final: false)
                }
                if consumed == 0 && available == buffer.count {
                    // A line longer than the buffer: garbage, skipped to its end.
                    offset += available
                    carried = 0
                    continue
                }
                // Count the lines consumed (orders are line numbers).
                order &+= UInt32(buffer[0..<consumed].reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) })
                buffer.withUnsafeMutableBytes { raw in
                    _ = memmove(raw.baseAddress!, raw.baseAddress! + consumed, available - consumed)
                }
                offset += consumed
                carried = available - consumed
            }
            outcome.parsedBytes = offset
            outcome.lines = order
            outcome.tail = Self.read(fd, at: max(0, offset - 64), count: min(offset, 64)) ?? []
            return outcome
        }
        guard var outcome = result else {
            hung = true
            map = nil
            return nil
        }
        result = nil
        stamp = outcome.stamp
        // Taken out of the outcome so the merge sorts the only copy in place.
        var slots = outcome.slots
        outcome.slots = nil
        guard slots != nil, let names = outcome.names else {
            if outcome.stamp == nil || !outcome.appended {
                map = nil
                parsedBytes = 0
                lines = 0
                tail = []
            }
            return map
        }
        // New lines' names are read through the new descriptor; the old one is closed with
        // the old map, and the file is the same one.
        let base = outcome.appended ? map?.slots ?? [] : []
        map = nil
        map = PerfMap(slots: PerfMap.merge(base, &slots!), names: names)
        parsedBytes = outcome.parsedBytes
        lines = outcome.lines
        tail = outcome.tail
        return map
    }
}
