/// When the watched program's identity (its name, executable and maps, `ProgramIdentity`) is
/// looked at again. An exec or a rename shows in stat (a new name, a new stack base), read once
/// a second; the maps, whose re-reading was a third of the agent's time over a busy family
/// (pgbench -c 50: each backend's maps every second), only then, and every `mapsInterval` for a
/// library loaded since (a capture that meets an address outside every known module re-reads
/// them at once). An identity read in the middle of an exec is read again every
/// `ProgramIdentity.settleSpacing` while it has re-reads left.
struct IdentityCheckSchedule {
    /// Between looks at stat for an exec or a rename.
    static let checkInterval = 1.0
    /// Between re-readings of the maps whatever stat says.
    static let mapsInterval = 30.0

    private var nextCheck = 0.0
    private var nextMapsCheck = 0.0
    private var nextSettle = 0.0
    /// A check ran since the watch began. Until then the thread is not put to sleep: a process
    /// found between its fork and its exec may have had its new maps read while its name was
    /// still the old one, and only that check (or the thread waking) renames it.
    private(set) var checked = false

    /// The watch begins at `now`: the first check is a second later.
    mutating func begin(at now: Double) {
        nextCheck = now + Self.checkInterval
    }

    /// The once-a-second check is due.
    func checkDue(at now: Double) -> Bool {
        now >= nextCheck
    }

    /// The maps are due for re-reading whatever stat says.
    func mapsDue(at now: Double) -> Bool {
        now >= nextMapsCheck
    }

    /// The maps were re-read at `now`.
    mutating func mapsChecked(at now: Double) {
        nextMapsCheck = now + Self.mapsInterval
    }

    /// The check ran at `now`.
    mutating func didCheck(at now: Double) {
        nextCheck = now + Self.checkInterval
        checked = true
    }

    /// An identity with `readsLeft` re-reads left is read again now, when due; the next is
    /// `ProgramIdentity.settleSpacing` later.
    mutating func settleDue(at now: Double, readsLeft: Int) -> Bool {
        guard readsLeft > 0, now >= nextSettle else { return false }
        nextSettle = now + ProgramIdentity.settleSpacing
        return true
    }
}
