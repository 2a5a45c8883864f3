#if canImport(Glibc)
import Glibc
#endif

/// A JIT's symbol file, `/tmp/perf-PID.map` (Node `--perf-basic-prof`, Java perf-map agents,
/// Python `-X perf`): one `START SIZE name` line per generated function, hex numbers. Later
/// lines win where code was regenerated at the same address, as perf does.
public struct PerfMap: Sendable {
    public struct Entry: Equatable, Sendable {
        public var start: UInt64
        public var size: UInt64
        public var name: String
    }

    /// Sorted by start; overlaps resolved in favour of the later line.
    public private(set) var entries: [Entry] = []

    /// Refuses files larger than this (a runaway JIT can write gigabytes).
    public static let maxBytes = 64 << 20

    /// Lines that are not `hex hex name` (garbage, truncated last line) are skipped.
    public init(text: Substring) {
        var parsed: [(entry: Entry, order: Int)] = []
        for (order, line) in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }).enumerated() {
            if let entry = Self.parseLine(line) { parsed.append((entry, order)) }
        }
        // Newest first at equal starts, then keep one entry per start.
        parsed.sort { $0.entry.start != $1.entry.start ? $0.entry.start < $1.entry.start : $0.order > $1.order }
        var seen = Set<UInt64>()
        entries = parsed.compactMap { seen.insert($0.entry.start).inserted ? $0.entry : nil }
    }

    static func parseLine(_ line: Substring) -> Entry? {
        let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard fields.count == 3 else { return nil }
        func hex(_ field: Substring) -> UInt64? {
            let digits = field.hasPrefix("0x") || field.hasPrefix("0X") ? field.dropFirst(2) : field
            guard !digits.isEmpty, digits.count <= 16 else { return nil }
            return UInt64(digits, radix: 16)
        }
        guard let start = hex(fields[0]), let size = hex(fields[1]), size > 0, start <= UInt64.max - size else {
            return nil
        }
        var name = fields[2]
        while let last = name.last, last == " " || last == "\t" || last == "\r" { name = name.dropLast() }
        guard !name.isEmpty else { return nil }
        return Entry(start: start, size: size, name: String(name.prefix(1024)))
    }

    public func lookup(_ address: UInt64) -> Entry? {
        let low = entries.countStarting(atOrBelow: address) { $0.start }
        // An earlier, longer entry may still cover the address past a shorter neighbour.
        var index = low - 1
        while index >= 0 && index >= low - 16 {
            let entry = entries[index]
            if address >= entry.start && address - entry.start < entry.size { return entry }
            index -= 1
        }
        return nil
    }
}

/// The perf map of one process, re-read when the file changes (JITs append as they compile).
final class PerfMapFile {
    let path: String
    private var stamp: (size: Int, modified: Int, nanos: Int)?
    private(set) var map: PerfMap?

    /// The file is named with the pid as the target sees it (its own pid namespace) and read
    /// through its root, so a JIT in a container is found.
    init(pid: Int32) {
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

    func current() -> PerfMap? {
        guard !hung else { return nil }
        // The file belongs to the target's user: it may be a FIFO, a link, huge, or on a
        // mount that hangs. Checked on the descriptor that is read, on the file-I/O worker.
        let path = path
        let previous = stamp
        let outcome = BoundedFileIO.shared.run { () -> (stamp: (Int, Int, Int)?, text: String?, changed: Bool) in
            guard let (fd, info) = try? SafeFileReader.openRegularFile(path) else { return (nil, nil, true) }
            defer { close(fd) }
            let now = (Int(info.st_size), Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec))
            if let previous, previous == now { return (now, nil, false) }
            guard info.st_size <= PerfMap.maxBytes,
                  let bytes = try? SafeFileReader.read(fd: fd, count: Int(info.st_size), path: path)
            else { return (now, nil, true) }
            return (now, String(decoding: bytes, as: UTF8.self), true)
        }
        guard let outcome else {
            hung = true
            map = nil
            return nil
        }
        stamp = outcome.stamp
        guard outcome.changed else { return map }
        map = outcome.text.map { PerfMap(text: Substring($0)) }
        return map
    }
}
