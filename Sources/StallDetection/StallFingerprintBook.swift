/// Counts how often each stall fingerprint occurred and decides, like annealing across stalls,
/// whether a recurrence deserves a new report: reports are written on occurrences 1, 2, 3, 5,
/// 8, 13, 21 … (Fibonacci), other occurrences are only counted. A service that hits the same
/// 2 s stall every minute thus yields a handful of reports a day, not 1440.
///
/// Codable as a whole so the agent can persist it between runs (`formatVersion` lets a later
/// layout be recognised). Bounded: past `capacity` fingerprints the least recently seen is
/// forgotten, so a process producing endless distinct stacks cannot grow the file forever.
public struct StallFingerprintBook: Codable, Hashable, Sendable {
    public struct Entry: Codable, Hashable, Sendable {
        /// Times this fingerprint was recorded.
        public var occurrences: Int
        /// Value of the book's counter when last recorded; orders entries for eviction without
        /// needing wall-clock time (monotonic times do not survive a restart).
        public var lastSeen: UInt64
        /// Occurrences for which a report was to be written.
        public var reportsWritten: Int
        /// Unix time of the last occurrence that got a report, when the caller gave one (the
        /// per-fingerprint rate limit; wall time because it must survive agent restarts).
        public var lastReportWallTime: Double?

        public init(occurrences: Int, lastSeen: UInt64, reportsWritten: Int, lastReportWallTime: Double? = nil) {
            self.occurrences = occurrences
            self.lastSeen = lastSeen
            self.reportsWritten = reportsWritten
            self.lastReportWallTime = lastReportWallTime
        }
    }

    /// The outcome of recording one occurrence.
    public struct Decision: Hashable, Sendable {
        public var fingerprint: String
        /// 1 for the first time this fingerprint is seen.
        public var occurrence: Int
        /// True when this occurrence should get its own report.
        public var shouldWriteReport: Bool
    }

    public static let currentFormatVersion = 1

    public private(set) var formatVersion: Int
    public var capacity: Int
    public private(set) var entries: [String: Entry]
    private var counter: UInt64

    public init(capacity: Int = 4096) {
        self.formatVersion = Self.currentFormatVersion
        self.capacity = max(1, capacity)
        self.entries = [:]
        self.counter = 0
    }

    /// Records one occurrence of `fingerprint` and says whether to write a report for it.
    /// With `wallTime` and a positive `minimumInterval`, an occurrence within that interval of
    /// the fingerprint's last report gets none, whatever the annealing schedule says.
    public mutating func record(
        _ fingerprint: String, wallTime: Double? = nil, minimumInterval: Double = 0
    ) -> Decision {
        counter += 1
        var entry = entries[fingerprint] ?? Entry(occurrences: 0, lastSeen: 0, reportsWritten: 0)
        entry.occurrences += 1
        entry.lastSeen = counter
        var write = Self.isReportOccurrence(entry.occurrences)
        if write, minimumInterval > 0, let wallTime, let last = entry.lastReportWallTime,
            wallTime - last < minimumInterval, wallTime >= last
        {
            write = false
        }
        if write {
            entry.reportsWritten += 1
            if let wallTime { entry.lastReportWallTime = wallTime }
        }
        entries[fingerprint] = entry
        evictIfNeeded(keeping: fingerprint)
        return Decision(fingerprint: fingerprint, occurrence: entry.occurrences, shouldWriteReport: write)
    }

    /// What `record` would decide, without recording.
    public func peek(_ fingerprint: String) -> Decision {
        let next = occurrences(of: fingerprint) + 1
        return Decision(fingerprint: fingerprint, occurrence: next, shouldWriteReport: Self.isReportOccurrence(next))
    }

    public func occurrences(of fingerprint: String) -> Int {
        entries[fingerprint]?.occurrences ?? 0
    }

    public var isEmpty: Bool { entries.isEmpty }

    /// True for 1, 2, 3, 5, 8, 13, 21 …: the occurrences that get a report.
    public static func isReportOccurrence(_ occurrence: Int) -> Bool {
        guard occurrence >= 1 else { return false }
        var (a, b) = (1, 2)
        while a < occurrence {
            (a, b) = (b, a &+ b)
            if a < 0 { return false }  // overflow: far beyond any real count
        }
        return a == occurrence
    }

    /// Adds another book's counts (e.g. one loaded from disk into a fresh one).
    public mutating func merge(_ other: StallFingerprintBook) {
        for (fingerprint, theirs) in other.entries.sorted(by: { $0.value.lastSeen < $1.value.lastSeen }) {
            counter += 1
            var entry = entries[fingerprint] ?? Entry(occurrences: 0, lastSeen: 0, reportsWritten: 0)
            entry.occurrences += theirs.occurrences
            entry.reportsWritten += theirs.reportsWritten
            if let time = theirs.lastReportWallTime { entry.lastReportWallTime = max(entry.lastReportWallTime ?? time, time) }
            entry.lastSeen = counter
            entries[fingerprint] = entry
        }
        evictIfNeeded(keeping: nil)
    }

    private mutating func evictIfNeeded(keeping fingerprint: String?) {
        while entries.count > capacity {
            guard
                let victim = entries.filter({ $0.key != fingerprint }).min(by: { $0.value.lastSeen < $1.value.lastSeen })
            else { return }
            entries[victim.key] = nil
        }
    }
}
