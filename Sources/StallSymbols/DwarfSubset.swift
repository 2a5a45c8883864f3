import CLibdw
import CLibelf
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// A DWARF-only ELF image with, uncompressed, just the sections that source lines and
/// inlined frames are read from. libdw inflates every compressed debug section when it opens
/// a file; Debian's debug files (libc6-dbg, …) compress them all, so opening libc's DWARF cost
/// ~10 MB of inflated data and about half of a dump's time, of which location lists,
/// macros and the like (~15 %) are never read for a stack. Inflating here also skips zlib's
/// checksum (the file's build-id has already been checked) and splits the work over two
/// threads.
///
/// `.debug_info` (two thirds of the work) is inflated only as far as the units the stack
/// touches, found in `.debug_aranges`: a stream cannot be entered in the middle, but it can
/// stop early (libc's `epoll_wait` unit ends at 71 % of it, `__libc_start_main`'s at 0.1 %).
/// libdw sees the section cut where inflation stopped, so it never reads bytes not yet there:
/// the libelf and libdw handles are made again when it grows (`generation`). Not
/// thread-safe: `DwarfSourceInfo` (under `ModuleSymbols`' lock) serialises calls.
final class DwarfSubset {
    /// What `DwarfSourceInfo` reads through libdw: DIEs, abbreviations, line programs, strings
    /// and the range and address tables DWARF 4 and 5 refer to.
    static let wantedSections: Set<String> = [
        ".debug_info", ".debug_abbrev", ".debug_line", ".debug_str", ".debug_line_str", ".debug_str_offsets",
        ".debug_addr", ".debug_ranges", ".debug_rnglists", ".debug_aranges",
    ]

    /// Refuses to inflate more than this (a corrupt or hostile header could claim anything).
    static let maxInflatedBytes: UInt64 = 1 << 30

    fileprivate struct Piece {
        var name: String
        var header: GElf_Shdr
        /// The stored bytes (compressed ones after their Elf64_Chdr).
        var stored: UnsafeRawBufferPointer
        var compressed: Bool
        var size: UInt64
        var alignment: UInt64
        var offset = 0
    }

    private let file: ElfImage
    private let buffer: UnsafeMutableRawBufferPointer
    /// Where `.debug_info`'s section header is in the buffer (its size is what libdw sees).
    private let infoHeader: Int
    /// Sections other than `.debug_info`, filled at the first `prepare`.
    private var pending: [Piece]
    private let info: Piece
    private var infoStream: Inflater?
    private var infoFilled = 0
    private var failed = false
    /// Address ranges to unit offsets, by start; empty without `.debug_aranges`.
    private var aranges: [(start: UInt64, end: UInt64, unit: UInt64)] = []
    private var elfHandle: OpaquePointer?
    private var elfGeneration = -1
    /// How much of `.debug_info` is inflated (for tests and measurements).
    var infoInflated: (bytes: Int, of: Int) { (infoFilled, Int(info.size)) }
    /// Changes whenever more of `.debug_info` is visible: handles made before are stale.
    private(set) var generation = 0

    /// What libdw would inflate reading `image` itself: the sizes the headers of its compressed
    /// debug sections claim (`SHF_COMPRESSED` and GNU `.zdebug`), 0 when none is compressed.
    /// Held in the budget before libdw is let at a file the subset does not handle.
    static func claimedInflatedBytes(_ image: ElfImage) -> Int {
        guard let elf = image.elf else { return 0 }
        var stringIndex = 0
        guard elf_getshdrstrndx(elf, &stringIndex) == 0 else { return 0 }
        let file = image.fileBytes
        var total: UInt64 = 0
        var section: OpaquePointer? = nil
        while let scn = elf_nextscn(elf, section) {
            section = scn
            var sh = GElf_Shdr()
            guard gelf_getshdr(scn, &sh) != nil, sh.sh_type != UInt32(SHT_NOBITS),
                let cName = elf_strptr(elf, stringIndex, Int(sh.sh_name))
            else { continue }
            let name = String(cString: cName)
            let gnu = name.hasPrefix(".zdebug")
            guard gnu || sh.sh_flags & UInt64(SHF_COMPRESSED) != 0 else { continue }
            // An unreadable header claims everything: such a file is not handed to libdw.
            guard sh.sh_offset <= UInt64(file.count), sh.sh_size <= UInt64(file.count) - sh.sh_offset, sh.sh_size >= 24
            else { return Int.max }
            let header = UnsafeRawBufferPointer(rebasing: file[Int(sh.sh_offset)..<Int(sh.sh_offset) + 24])
            let claimed =
                gnu
                ? UInt64(bigEndian: header.loadUnaligned(fromByteOffset: 4, as: UInt64.self))
                : header.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let (sum, overflow) = total.addingReportingOverflow(claimed)
            guard !overflow, sum < UInt64(Int.max) else { return Int.max }
            total = sum
        }
        return Int(total)
    }

    /// The subset of `image`'s DWARF, or nil when there is nothing worth it (no compressed
    /// debug section) or the file is something this does not handle (relocatable objects,
    /// GNU `.zdebug`, a dwz supplementary file, zstd, a corrupt stream): libdw then reads the
    /// file itself, as before.
    static func make(from image: ElfImage) -> DwarfSubset? {
        guard let elf = image.elf else { return nil }
        var ehdr = GElf_Ehdr()
        guard gelf_getehdr(elf, &ehdr) != nil, gelf_getclass(elf) == ELFCLASS64, ehdr.e_type != UInt16(ET_REL)
        else { return nil }
        var stringIndex = 0
        guard elf_getshdrstrndx(elf, &stringIndex) == 0 else { return nil }
        let file = image.fileBytes
        var pieces: [Piece] = []
        var anyCompressed = false
        var section: OpaquePointer? = nil
        while let scn = elf_nextscn(elf, section) {
            section = scn
            var sh = GElf_Shdr()
            guard gelf_getshdr(scn, &sh) != nil, let cName = elf_strptr(elf, stringIndex, Int(sh.sh_name)) else { continue }
            let name = String(cString: cName)
            // Supplementary DWARF (dwz) is found by libdw through these; keep its own path.
            if name == ".gnu_debugaltlink" || name.hasPrefix(".zdebug") { return nil }
            guard wantedSections.contains(name), sh.sh_type != UInt32(SHT_NOBITS) else { continue }
            guard sh.sh_offset <= UInt64(file.count), sh.sh_size <= UInt64(file.count) - sh.sh_offset else { return nil }
            let stored = UnsafeRawBufferPointer(rebasing: file[Int(sh.sh_offset)..<Int(sh.sh_offset + sh.sh_size)])
            if sh.sh_flags & UInt64(SHF_COMPRESSED) != 0 {
                // Elf64_Chdr: type, reserved, size, alignment; then the zlib stream.
                guard stored.count > 24 + 2,
                    stored.loadUnaligned(fromByteOffset: 0, as: UInt32.self) == UInt32(ELFCOMPRESS_ZLIB)
                else { return nil }
                let size = stored.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
                let alignment = stored.loadUnaligned(fromByteOffset: 16, as: UInt64.self)
                anyCompressed = true
                pieces.append(
                    Piece(
                        name: name, header: sh, stored: UnsafeRawBufferPointer(rebasing: stored[24...]), compressed: true,
                        size: size, alignment: alignment))
            } else {
                pieces.append(Piece(name: name, header: sh, stored: stored, compressed: false, size: sh.sh_size, alignment: sh.sh_addralign))
            }
        }
        guard anyCompressed, let infoIndex = pieces.firstIndex(where: { $0.name == ".debug_info" }), pieces[infoIndex].size > 0
        else { return nil }

        // Layout: ELF header, section contents, .shstrtab, section headers.
        var names: [UInt8] = [0]
        var nameOffsets: [Int] = []
        for piece in pieces {
            nameOffsets.append(names.count)
            names += Array(piece.name.utf8) + [0]
        }
        let shstrtabName = names.count
        names += Array(".shstrtab".utf8) + [0]
        var total: UInt64 = 64
        for index in pieces.indices {
            let alignment = min(max(pieces[index].alignment, 1), 64)
            total = (total + alignment - 1) / alignment * alignment
            pieces[index].offset = Int(total)
            total += pieces[index].size
            guard total <= maxInflatedBytes else { return nil }
        }
        let namesOffset = Int(total)
        total += UInt64(names.count)
        let headersOffset = Int((total + 7) / 8 * 8)
        let sectionCount = pieces.count + 2
        let byteCount = headersOffset + sectionCount * 64
        // Pages never written (the part of .debug_info no stack reached) never become
        // resident: a fresh anonymous mapping, not malloc's possibly reused heap.
        guard let base = mmap(nil, byteCount, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), base != MAP_FAILED
        else { return nil }
        let buffer = UnsafeMutableRawBufferPointer(start: base, count: byteCount)

        buffer.copyBytes(from: UnsafeRawBufferPointer(start: file.baseAddress, count: 16))  // e_ident
        func store<T: FixedWidthInteger>(_ value: T, at offset: Int) { buffer.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self) }
        store(ehdr.e_type, at: 16)
        store(ehdr.e_machine, at: 18)
        store(ehdr.e_version, at: 20)
        store(UInt64(0), at: 24)  // e_entry
        store(UInt64(0), at: 32)  // e_phoff
        store(UInt64(headersOffset), at: 40)  // e_shoff
        store(ehdr.e_flags, at: 48)
        store(UInt16(64), at: 52)  // e_ehsize
        store(UInt16(0), at: 54)  // e_phentsize
        store(UInt16(0), at: 56)  // e_phnum
        store(UInt16(64), at: 58)  // e_shentsize
        store(UInt16(sectionCount), at: 60)
        store(UInt16(sectionCount - 1), at: 62)  // e_shstrndx
        UnsafeMutableRawBufferPointer(rebasing: buffer[namesOffset..<namesOffset + names.count]).copyBytes(from: names)
        func header(_ index: Int, name: Int, type: UInt32, flags: UInt64, offset: Int, size: UInt64, alignment: UInt64, entrySize: UInt64) {
            let at = headersOffset + index * 64
            store(UInt32(name), at: at)
            store(type, at: at + 4)
            store(flags, at: at + 8)
            store(UInt64(0), at: at + 16)  // sh_addr
            store(UInt64(offset), at: at + 24)
            store(size, at: at + 32)
            store(UInt32(0), at: at + 40)  // sh_link
            store(UInt32(0), at: at + 44)  // sh_info
            store(alignment, at: at + 48)
            store(entrySize, at: at + 56)
        }
        header(0, name: 0, type: 0, flags: 0, offset: 0, size: 0, alignment: 0, entrySize: 0)
        for (index, piece) in pieces.enumerated() {
            header(
                index + 1, name: nameOffsets[index], type: piece.header.sh_type,
                flags: piece.header.sh_flags & ~UInt64(SHF_COMPRESSED), offset: piece.offset, size: piece.size,
                alignment: max(piece.alignment, 1), entrySize: piece.header.sh_entsize)
        }
        header(
            sectionCount - 1, name: shstrtabName, type: UInt32(SHT_STRTAB), flags: 0, offset: namesOffset,
            size: UInt64(names.count), alignment: 1, entrySize: 0)
        var rest = pieces
        let info = rest.remove(at: infoIndex)
        let subset = DwarfSubset(
            file: image, buffer: buffer, infoHeader: headersOffset + (infoIndex + 1) * 64, info: info, pending: rest)
        guard !info.compressed || subset.infoStream != nil else { return nil }
        // The address table is small and says how far .debug_info must be inflated.
        if let index = subset.pending.firstIndex(where: { $0.name == ".debug_aranges" }) {
            let aranges = subset.pending.remove(at: index)
            guard subset.take(Int(aranges.size), into: &subset.heldPieces), subset.fill(aranges) else { return nil }
            subset.aranges = Self.parseAranges(UnsafeRawBufferPointer(subset.target(aranges)))
        }
        return subset
    }

    private init(file: ElfImage, buffer: UnsafeMutableRawBufferPointer, infoHeader: Int, info: Piece, pending: [Piece]) {
        self.file = file
        self.buffer = buffer
        self.infoHeader = infoHeader
        self.info = info
        self.pending = pending
        if info.compressed { infoStream = Inflater(info, into: target(info), file: file) }
    }

    deinit {
        if let elfHandle { elf_end(elfHandle) }
        munmap(buffer.baseAddress, buffer.count)
        budget.release(heldPieces + heldInfo)
    }

    /// Everything written into `buffer` is held in the agent's `InflationBudget` first; only
    /// pages written become resident, so that is what the subset costs. Pieces are taken on
    /// the caller's thread, `.debug_info` by `inflateInfo` alone (they may run side by side).
    private let budget = InflationBudget.shared
    private var heldPieces = 0
    private var heldInfo = 0

    private func take(_ bytes: Int, into held: inout Int) -> Bool {
        guard budget.reserve(bytes, for: file.path) else { return false }
        held += bytes
        return true
    }

    private func target(_ piece: Piece) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: buffer[piece.offset..<piece.offset + Int(piece.size)])
    }

    fileprivate func fill(_ piece: Piece) -> Bool {
        if piece.compressed {
            guard let inflater = Inflater(piece, into: target(piece), file: file) else { return false }
            return inflater.inflate(upTo: Int(piece.size)) && inflater.finish()
        }
        guard piece.stored.count == Int(piece.size) else { return false }
        target(piece).copyMemory(from: piece.stored)
        return true
    }

    /// The libelf handle over the subset as filled so far. The caller must have ended every
    /// libdw handle of an older `generation` first (libdw reads through this handle).
    func elf() -> OpaquePointer? {
        if let elfHandle, elfGeneration == generation { return elfHandle }
        if let elfHandle { elf_end(elfHandle) }
        // libelf takes the section's size from its header, read here, once per handle.
        buffer.storeBytes(of: UInt64(infoFilled).littleEndian, toByteOffset: infoHeader + 32, as: UInt64.self)
        elfHandle = elf_memory(buffer.baseAddress!.assumingMemoryBound(to: CChar.self), buffer.count)
        elfGeneration = generation
        return elfHandle
    }

    /// Fills what libdw reads for `address`: every section but `.debug_info` in full, and
    /// `.debug_info` through the end of the unit `.debug_aranges` names for it. Returns that
    /// unit's offset, or nil when the table does not know the address (the caller then needs
    /// `prepareAll`) or inflating failed.
    func prepare(for address: UInt64) -> UInt64? {
        guard !failed else { return nil }
        let low = aranges.countStarting(atOrBelow: address) { $0.start }
        // Ranges may overlap in odd producers; look back a little.
        var found: UInt64?
        var index = low - 1
        while found == nil && index >= 0 && index >= low - 8 {
            if address < aranges[index].end { found = aranges[index].unit }
            index -= 1
        }
        guard let unit = found, unit + 12 < info.size else { return nil }
        let ok = fillPendingBeside { [self] in
            guard inflateInfo(upTo: Int(unit) + 12) else { return false }
            // The unit's length; libdw also reads every unit header before it, all inside.
            let bytes = UnsafeRawBufferPointer(target(info))
            let length = UInt64(bytes.loadUnaligned(fromByteOffset: Int(unit), as: UInt32.self))
            let end: UInt64
            if length == 0xffff_ffff {
                end = unit &+ 12 &+ bytes.loadUnaligned(fromByteOffset: Int(unit) + 4, as: UInt64.self)
            } else {
                end = unit + 4 + length
            }
            guard end <= info.size else { return false }
            return inflateInfo(upTo: Int(end))
        }
        return ok ? unit : nil
    }

    /// Every section in full (a unit found without `.debug_aranges`).
    func prepareAll() -> Bool {
        guard !failed else { return false }
        return fillPendingBeside { [self] in inflateInfo(upTo: Int(info.size)) }
    }

    private static let hasCoresToSpare = sysconf(Int32(_SC_NPROCESSORS_ONLN)) > 2

    /// Runs `inflateInfo`, the first time with the pending sections filled beside it on a
    /// second thread where the machine has cores to spare: on two, the second thread took the
    /// core of the very process being dumped (a running target's longest pause during a dump
    /// went from ~0.1 ms to ~4 ms), so there the pieces are filled one after the other.
    private func fillPendingBeside(_ inflateInfo: () -> Bool) -> Bool {
        if !pending.isEmpty, !take(pending.reduce(0) { $0 + Int($1.size) }, into: &heldPieces) {
            failed = true
            return false
        }
        if pending.isEmpty || !DwarfSubset.hasCoresToSpare {
            let pieces = pending
            pending = []
            if !(inflateInfo() && pieces.allSatisfy({ fill($0) })) { failed = true }
            return !failed
        }
        let results = UnsafeMutableBufferPointer<Bool>.allocate(capacity: 1)
        results.initialize(repeating: false)
        defer { results.deallocate() }
        let work = Work(subset: self, pieces: pending, results: results)
        pending = []
        var infoResult = false
        withoutActuallyEscaping(inflateInfo) { inflateInfo in
            let job = Job(run: inflateInfo)
            DispatchQueue.concurrentPerform(iterations: 2) { worker in
                if worker == 0 {
                    job.result = job.run()
                } else {
                    work.results[0] = work.pieces.allSatisfy { work.subset.fill($0) }
                }
            }
            infoResult = job.result
        }
        if !(infoResult && results[0]) { failed = true }
        return !failed
    }

    private func inflateInfo(upTo end: Int) -> Bool {
        guard end > infoFilled else { return true }
        // Taken a megabyte ahead (the inflater may write past `end` to its chunk's end).
        let wanted = infoStream == nil ? Int(info.size) : min(Int(info.size), (end + (1 << 20) - 1) & ~((1 << 20) - 1))
        if wanted > heldInfo, !take(wanted - heldInfo, into: &heldInfo) { return false }
        guard let stream = infoStream else {
            // Stored uncompressed: copy it whole, once.
            guard info.stored.count == Int(info.size) else { return false }
            target(info).copyMemory(from: info.stored)
            infoFilled = Int(info.size)
            generation += 1
            return true
        }
        guard stream.inflate(upTo: end) else { return false }
        infoFilled = stream.written
        generation += 1
        if infoFilled == Int(info.size) {
            guard stream.finish() else { return false }
            infoStream = nil
        }
        return true
    }

    /// `.debug_aranges` sets: (address, length) pairs naming the unit at a `.debug_info` offset.
    static func parseAranges(_ bytes: UnsafeRawBufferPointer) -> [(start: UInt64, end: UInt64, unit: UInt64)] {
        var result: [(start: UInt64, end: UInt64, unit: UInt64)] = []
        var offset = 0
        while offset + 16 <= bytes.count {
            let setStart = offset
            var length = UInt64(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            var offsetSize = 4
            offset += 4
            if length == 0xffff_ffff {
                guard offset + 8 <= bytes.count else { break }
                length = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                offsetSize = 8
                offset += 8
            }
            guard length <= UInt64(bytes.count - offset) else { break }
            let setEnd = offset + Int(length)
            guard offset + 4 + offsetSize <= setEnd else { break }
            let version = bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)
            let unit =
                offsetSize == 8
                ? bytes.loadUnaligned(fromByteOffset: offset + 2, as: UInt64.self)
                : UInt64(bytes.loadUnaligned(fromByteOffset: offset + 2, as: UInt32.self))
            let addressSize = Int(bytes[offset + 2 + offsetSize])
            let segmentSize = Int(bytes[offset + 3 + offsetSize])
            offset += 4 + offsetSize
            if version == 2, addressSize == 8, segmentSize == 0 {
                // Tuples are aligned to their size from the set's start.
                offset = setStart + (offset - setStart + 15) / 16 * 16
                while offset + 16 <= setEnd {
                    let start = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    let size = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)
                    offset += 16
                    if start == 0 && size == 0 { break }
                    if size > 0, start <= UInt64.max - size { result.append((start, start + size, unit)) }
                }
            }
            offset = setEnd
        }
        result.sort { $0.start < $1.start }
        return result
    }

    /// The two workers touch disjoint byte ranges of the buffer (and the info stream only on
    /// worker 0); `concurrentPerform` returns only when both are done.
    // Unchecked: only worker 1 uses it, filling its own pieces' bytes and `results[0]`, read after `concurrentPerform` returns.
    private struct Work: @unchecked Sendable {
        var subset: DwarfSubset
        var pieces: [Piece]
        var results: UnsafeMutableBufferPointer<Bool>
    }

    // Unchecked: only worker 0 calls `run` and writes `result`, which is read after `concurrentPerform` returns.
    private final class Job: @unchecked Sendable {
        let run: () -> Bool
        var result = false
        init(run: @escaping () -> Bool) { self.run = run }
    }
}

/// One zlib stream inflated into its place, as far as asked. The compressed bytes are dropped
/// from memory as they are consumed (they are not read again): libc's 3.6 MB would otherwise
/// stay in the agent's RSS beside what they inflate to.
private final class Inflater {
    /// zlib keeps a pointer back to the stream: it must not move.
    private let stream: UnsafeMutablePointer<z_stream>
    private let input: UnsafeRawBufferPointer
    private let output: UnsafeMutableRawBufferPointer
    private let file: ElfImage
    private(set) var written = 0
    private var status = Z_OK

    /// A zlib stream: a two-byte header (deflate, no preset dictionary), raw deflate, a
    /// checksum. Raw inflation skips computing the checksum.
    fileprivate init?(_ piece: DwarfSubset.Piece, into output: UnsafeMutableRawBufferPointer, file: ElfImage) {
        let cmf = piece.stored[0]
        let flags = piece.stored[1]
        let input = UnsafeRawBufferPointer(rebasing: piece.stored[2...])
        guard piece.compressed, cmf & 0x0f == 8, (UInt16(cmf) << 8 | UInt16(flags)) % 31 == 0, flags & 0x20 == 0,
            output.count > 0, input.count <= Int(UInt32.max)
        else { return nil }
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        guard inflateInit2_(stream, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            stream.deallocate()
            return nil
        }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress!.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = UInt32(input.count)
        stream.pointee.next_out = output.baseAddress!.assumingMemoryBound(to: Bytef.self)
        self.stream = stream
        self.input = input
        self.output = output
        self.file = file
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
    }

    /// Inflates until at least `end` bytes are out.
    func inflate(upTo end: Int) -> Bool {
        let end = min(end, output.count)
        while status == Z_OK && written < end {
            // Up to the end asked (in steps of 64 KB to 1 MB), not beyond.
            stream.pointee.avail_out = UInt32(min(output.count - written, min(max(end - written, 1 << 16), 1 << 20)))
            let before = Int(stream.pointee.avail_out)
            status = zlibInflate(stream, Z_NO_FLUSH)
            written += before - Int(stream.pointee.avail_out)
            // From the start each time: pages already dropped cost nothing, and a page cut by
            // the previous step's end is dropped once it is wholly consumed.
            file.releasePages(UnsafeRawBufferPointer(start: input.baseAddress, count: input.count - Int(stream.pointee.avail_in)))
        }
        return written >= end && (status == Z_OK || status == Z_STREAM_END)
    }

    /// True when the stream ends exactly at the output's end: not more than its header said.
    func finish() -> Bool {
        guard written == output.count else { return false }
        if status == Z_OK {
            stream.pointee.avail_out = 0
            status = zlibInflate(stream, Z_FINISH)
        }
        return status == Z_STREAM_END
    }
}

/// zlib's `inflate`, named apart from `Inflater.inflate(upTo:)`.
private func zlibInflate(_ stream: UnsafeMutablePointer<z_stream>, _ flush: Int32) -> Int32 { inflate(stream, flush) }
