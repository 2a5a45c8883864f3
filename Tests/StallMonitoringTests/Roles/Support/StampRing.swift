import CPosix
import StallDetection

@testable import StallProc

#if canImport(Glibc)
import Glibc
#endif

/// A perf ring written by hand the way the kernel writes wait stamps (linux/perf_event.h: a
/// metadata page, then records of a header, identifier, time, ABI, SP and IP), read back by
/// the agent's own drain. Fakes get their summaries from the real adding up, not from a copy.
final class StampRing {
    /// The ids the drain is told are entries; anything else is an exit.
    static let entryID: UInt64 = 41
    static let exitID: UInt64 = 42

    private let page = Int(sysconf(Int32(_SC_PAGESIZE)))
    let bytes: Int
    private let memory: UnsafeMutableRawPointer
    private let request = UnsafeMutablePointer<sa_wait_stamp_summary>.allocate(capacity: 1)

    /// A ring of `dataPages` pages after its metadata page.
    init(dataPages: Int = 2) {
        bytes = page * (1 + dataPages)
        memory = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: page)
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
        request.initialize(to: sa_wait_stamp_summary())
        withUnsafeMutableBytes(of: &request.pointee.entry_ids) { $0.storeBytes(of: Self.entryID, as: UInt64.self) }
        request.pointee.entry_id_count = 1
    }

    deinit {
        memory.deallocate()
        request.deallocate()
    }

    // `struct perf_event_mmap_page`: data_head and data_tail follow its first 1 KiB.
    private var head: UInt64 {
        get { memory.load(fromByteOffset: 1024, as: UInt64.self) }
        set { memory.storeBytes(of: newValue, toByteOffset: 1024, as: UInt64.self) }
    }
    var tail: UInt64 { memory.load(fromByteOffset: 1032, as: UInt64.self) }

    /// Appends one record at the head (wrapping at the ring's end) and publishes it.
    private func append(type: UInt32, words: [UInt64], size: UInt16? = nil) {
        let data = memory + page
        let dataBytes = UInt64(bytes - page)
        var record: [UInt8] = []
        withUnsafeBytes(of: type) { record += $0 }
        withUnsafeBytes(of: UInt16(0)) { record += $0 }
        withUnsafeBytes(of: size ?? UInt16(8 + 8 * words.count)) { record += $0 }
        for word in words { withUnsafeBytes(of: word) { record += $0 } }
        for (offset, byte) in record.enumerated() {
            data.storeBytes(of: byte, toByteOffset: Int((head + UInt64(offset)) % dataBytes), as: UInt8.self)
        }
        head += UInt64(record.count)
    }

    /// A stamp as the kernel writes it (`PERF_RECORD_SAMPLE`, user registers of a 64-bit task).
    func write(_ stamp: WaitStampSummary.Stamp) {
        let id = stamp.entered ? Self.entryID : Self.exitID
        append(
            type: 9, words: [id, UInt64((stamp.time * 1e9).rounded()), 2, stamp.site.sp, stamp.site.pc])
    }

    /// A stamp of a thread caught in the kernel (ABI none): no registers follow, and the
    /// record is three words long.
    func writeWithoutRegisters(entered: Bool, time: Double) {
        append(type: 9, words: [entered ? Self.entryID : Self.exitID, UInt64((time * 1e9).rounded()), 0])
    }

    /// The kernel's word that it dropped records (`PERF_RECORD_LOST`: id, count).
    func writeLost(_ count: UInt64 = 3) { append(type: 2, words: [Self.exitID, count]) }

    /// A record whose size runs past the head: what a torn ring looks like.
    func writeTorn() { append(type: 9, words: [Self.entryID], size: 200) }

    /// The agent's drain of everything written since the last one.
    func drain(home: HomeWaitTracker.Site?) -> WaitStampSummary {
        LoopTurnCounter.drain(ring: memory, bytes: bytes, request: request, home: home)
    }
}

extension WaitStampSummary {
    /// One stamp, as the kernel writes it.
    struct Stamp: Equatable {
        var entered: Bool
        var time: Double
        var site: HomeWaitTracker.Site
    }

    /// `stamps` written into a ring and drained against `home`, as the watch's counter does.
    init(_ stamps: [Stamp], home: HomeWaitTracker.Site?, lost: Bool = false) {
        let pages = max(2, (stamps.count * 48 + 64) / Int(sysconf(Int32(_SC_PAGESIZE))) + 1)
        let ring = StampRing(dataPages: pages)
        if lost { ring.writeLost() }
        stamps.forEach(ring.write)
        self = ring.drain(home: home)
    }
}
