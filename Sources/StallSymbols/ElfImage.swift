import CLibelf
import CPosix
import Synchronization

import StallProc
#if canImport(Glibc)
import Glibc
#endif

/// One ELF file (or the vDSO's in-memory image), opened once and shared by the unwinder and
/// the symbolizer. The bytes stay mapped so unwinding can read `.eh_frame` without a
/// syscall; symbols are read lazily on first use.
// Unchecked: `bytes` and `elf` are set in init and only read; `heldBudget` is set before the image is shared, read in deinit.
public final class ElfImage: @unchecked Sendable {
    public struct LoadSegment: Equatable, Sendable {
        public var fileOffset: UInt64
        public var virtualAddress: UInt64
        public var fileSize: UInt64
        public var memorySize: UInt64
        public var executable: Bool
    }

    /// `.eh_frame_hdr`'s binary-search table, in the file's virtual addresses.
    public struct EhFrameHeader: Equatable, Sendable {
        public var virtualAddress: UInt64
        public var tableVirtualAddress: UInt64
        public var fdeCount: UInt64
    }

    public let path: String
    public let buildID: String?
    public let segments: [LoadSegment]
    public let ehFrameHeader: EhFrameHeader?
    /// ET_DYN: a shared object or PIE, loaded at a bias.
    public let isPositionIndependent: Bool
    private let bytes: UnsafeMutableRawBufferPointer
    private enum Storage {
        /// A file mapping registered with the SIGBUS guard under this slot.
        case guardedMapping(Int32)
        /// Memory this image allocated (a copy).
        case owned
    }
    private let storage: Storage
    /// The libelf handle, for the symbol and DWARF readers of this module.
    package let elf: OpaquePointer?
    /// Built on first use, under a lock: one image is shared by every monitor of a host agent.
    private let symbolTable = LazyBox<ElfSymbolTable>()
    private let crc = LazyBox<UInt32>()
    /// Debug companions found for this image, keyed by the debug image (nil key: none), so
    /// the merged tables and DWARF are built once per pair of files.
    let companions = Mutex<[ObjectIdentifier?: ModuleSymbols]>([:])

    /// Opens a file by path (typically through `/proc/PID/root/…` so containers work). Only a
    /// regular file is accepted, opened so that a FIFO or a swapped-in symbolic link cannot
    /// block or redirect the open (see `SafeFileReader`).
    public convenience init(path: String, displayPath: String? = nil) throws {
        let (fd, info) = try SafeFileReader.openRegularFile(path, maxBytes: ElfImage.maxFileBytes)
        defer { close(fd) }
        try self.init(fileDescriptor: fd, info: info, path: path, displayPath: displayPath)
    }

    /// ELF files larger than this are refused (nothing real comes close; a sparse file could).
    static let maxFileBytes: Int64 = 4 << 30

    /// Maps an open regular file. The file's owner may truncate it at any time, so the mapping
    /// is registered with the SIGBUS guard: a read past the new end sees zeros instead of
    /// killing the agent, and `changedSinceMapping` turns true. Without a free guard slot the
    /// file is read into memory instead.
    convenience init(fileDescriptor fd: Int32, info: stat, path: String, displayPath: String? = nil) throws {
        guard info.st_size > 16 else { throw StallAgentError.invalidArgument("\(path): not an ELF file") }
        let size = Int(info.st_size)
        sa_sigbus_guard_install()
        // Private and writable so libelf may never fault on its own bookkeeping; pages are
        // shared with the page cache until written, which nothing does.
        if let base = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0), base != MAP_FAILED {
            let slot = sa_sigbus_guard_add(base, size)
            if slot >= 0 {
                try self.init(
                    bytes: UnsafeMutableRawBufferPointer(start: base, count: size), storage: .guardedMapping(slot),
                    path: displayPath ?? path)
                return
            }
            munmap(base, size)
        }
        guard size <= 512 << 20 else { throw StallAgentError.invalidArgument("\(path): too large to read into memory") }
        let copy = try SafeFileReader.read(fd: fd, count: size, path: path)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(copy.count, 1), alignment: 16)
        buffer.copyBytes(from: copy)
        try self.init(
            bytes: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<copy.count]), storage: .owned, path: displayPath ?? path)
    }

    /// Wraps an in-memory image (the vDSO). The bytes are copied.
    public convenience init(memory: [UInt8], path: String) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(memory.count, 1), alignment: 16)
        buffer.copyBytes(from: memory)
        try self.init(
            bytes: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<memory.count]), storage: .owned,
            path: path)
    }

    /// Wraps an image built in memory; the image owns (and frees) the buffer, also when
    /// this throws.
    convenience init(adopting buffer: UnsafeMutableRawBufferPointer, path: String) throws {
        try self.init(bytes: buffer, storage: .owned, path: path)
    }

    private init(bytes: UnsafeMutableRawBufferPointer, storage: Storage, path: String) throws {
        self.bytes = bytes
        self.storage = storage
        self.path = path
        _ = elf_version(UInt32(EV_CURRENT))
        let handle = elf_memory(bytes.baseAddress!.assumingMemoryBound(to: CChar.self), bytes.count)
        var header = GElf_Ehdr()
        guard let handle, elf_kind(handle) == ELF_K_ELF, gelf_getehdr(handle, &header) != nil else {
            if let handle { elf_end(handle) }
            ElfImage.release(bytes, storage)
            throw StallAgentError.invalidArgument("\(path): not a valid ELF file")
        }
        elf = handle
        isPositionIndependent = header.e_type == UInt16(ET_DYN)

        var count = 0
        elf_getphdrnum(handle, &count)
        var segments: [LoadSegment] = []
        var ehFrameHdr: (vaddr: UInt64, offset: UInt64, size: UInt64)?
        for index in 0..<count {
            var ph = GElf_Phdr()
            guard gelf_getphdr(handle, Int32(index), &ph) != nil else { continue }
            if ph.p_type == UInt32(PT_LOAD) {
                segments.append(
                    LoadSegment(
                        fileOffset: ph.p_offset, virtualAddress: ph.p_vaddr, fileSize: ph.p_filesz,
                        memorySize: ph.p_memsz, executable: ph.p_flags & UInt32(PF_X) != 0))
            } else if ph.p_type == UInt32(PT_GNU_EH_FRAME) {
                ehFrameHdr = (ph.p_vaddr, ph.p_offset, ph.p_filesz)
            }
        }
        self.segments = segments
        self.buildID = ElfImage.readBuildID(handle, bytes: UnsafeRawBufferPointer(bytes))
        if let hdr = ehFrameHdr {
            self.ehFrameHeader = ElfImage.parseEhFrameHeader(
                bytes: UnsafeRawBufferPointer(bytes), offset: hdr.offset, size: hdr.size, vaddr: hdr.vaddr)
        } else {
            self.ehFrameHeader = nil
        }
    }

    deinit {
        if let elf { elf_end(elf) }
        ElfImage.release(bytes, storage)
        if let heldBudget { heldBudget.budget.release(heldBudget.bytes) }
    }

    /// Inflated bytes this image holds in a budget (MiniDebugInfo), given back with it.
    private var heldBudget: (budget: InflationBudget, bytes: Int)?

    func holdBudget(_ budget: InflationBudget, bytes: Int) { heldBudget = (budget, bytes) }

    private static func release(_ bytes: UnsafeMutableRawBufferPointer, _ storage: Storage) {
        switch storage {
        case .guardedMapping(let slot):
            // Unguard first: a fault between the two would otherwise hit a stale range.
            sa_sigbus_guard_remove(slot)
            munmap(bytes.baseAddress, bytes.count)
        case .owned:
            bytes.deallocate()
        }
    }

    /// True when the mapped file was truncated after it was mapped (a read past its new end
    /// was answered with zeros): its contents, build-id included, are no longer trustworthy.
    public var changedSinceMapping: Bool {
        if case .guardedMapping(let slot) = storage { return sa_sigbus_guard_slot_faults(slot) > 0 }
        return false
    }

    // MARK: Addresses

    /// Converts a file offset to the ELF virtual address it is loaded at.
    public func virtualAddress(forFileOffset offset: UInt64) -> UInt64? {
        for s in segments where offset >= s.fileOffset && offset < s.fileOffset + max(s.fileSize, 1) {
            return s.virtualAddress + (offset - s.fileOffset)
        }
        return nil
    }

    public func fileOffset(forVirtualAddress vaddr: UInt64) -> UInt64? {
        for s in segments where vaddr >= s.virtualAddress && vaddr < s.virtualAddress + s.fileSize {
            return s.fileOffset + (vaddr - s.virtualAddress)
        }
        return nil
    }

    /// Reads a little-endian 64-bit word at a virtual address, from the file's bytes.
    @inline(__always)
    public func readWord(atVirtualAddress vaddr: UInt64) -> UInt64? {
        guard let offset = fileOffset(forVirtualAddress: vaddr), offset + 8 <= UInt64(bytes.count) else {
            return nil
        }
        return bytes.loadUnaligned(fromByteOffset: Int(offset), as: UInt64.self)
    }

    /// Reads `count` bytes at a virtual address (for instruction checks), or nil.
    public func readBytes(atVirtualAddress vaddr: UInt64, count: Int) -> [UInt8]? {
        guard let offset = fileOffset(forVirtualAddress: vaddr), offset + UInt64(count) <= UInt64(bytes.count) else {
            return nil
        }
        return Array(bytes[Int(offset)..<Int(offset) + count])
    }

    // MARK: Symbols

    public func symbol(forVirtualAddress vaddr: UInt64) -> ElfSymbolTable.Match? {
        symbolTable.get { ElfSymbolTable(images: [self]) }.lookup(vaddr)
    }

    /// The addresses the named function's code spans (its symbol's value and size), nil when
    /// no symbol has that name or it has no size.
    public func range(ofSymbol name: String) -> Range<UInt64>? {
        symbol(named: name, where: { $0.st_size > 0 }).map { $0.st_value..<($0.st_value &+ $0.st_size) }
    }

    /// The virtual address of a named symbol of any type (e.g. a data object), or nil.
    public func address(ofSymbol name: String) -> UInt64? {
        symbol(named: name)?.st_value
    }

    /// The first defined symbol named `name` that `accept` takes, in either symbol table.
    private func symbol(named name: String, where accept: (GElf_Sym) -> Bool = { _ in true }) -> GElf_Sym? {
        guard let elf else { return nil }
        var found: GElf_Sym?
        ElfSymbolTable.forEachSymbol(in: elf) { sym, symbolName, _ in
            if strcmp(symbolName, name) == 0, accept(sym) { found = sym }
            return found == nil
        }
        return found
    }

    // MARK: Sections

    /// The bytes of the named section as stored in the file, or nil when it is missing,
    /// has no file contents (SHT_NOBITS, as in a debug file's copy of `.text`) or lies
    /// outside the file (truncated or corrupt).
    public func section(named name: String) -> UnsafeRawBufferPointer? {
        guard let elf else { return nil }
        var stringIndex = 0
        guard elf_getshdrstrndx(elf, &stringIndex) == 0 else { return nil }
        var section: OpaquePointer? = nil
        while let scn = elf_nextscn(elf, section) {
            section = scn
            var sh = GElf_Shdr()
            guard gelf_getshdr(scn, &sh) != nil, let cName = elf_strptr(elf, stringIndex, Int(sh.sh_name)),
                strcmp(cName, name) == 0
            else { continue }
            guard sh.sh_type != UInt32(SHT_NOBITS), sh.sh_offset <= UInt64(bytes.count),
                sh.sh_size <= UInt64(bytes.count) - sh.sh_offset
            else { return nil }
            return UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[Int(sh.sh_offset)..<Int(sh.sh_offset + sh.sh_size)])
        }
        return nil
    }

    /// Drops the pages of `range` (inside this image) from the agent's memory when the image
    /// is a file mapping: a later read maps them again from the page cache. For large parts
    /// read once or rarely (symbol sections, compressed DWARF already inflated). Never for an
    /// in-memory copy, whose pages would come back as zeros.
    func releasePages(_ range: UnsafeRawBufferPointer) {
        guard case .guardedMapping = storage, let base = range.baseAddress, let own = bytes.baseAddress else { return }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let lower = max(Int(bitPattern: base), Int(bitPattern: own))
        let upper = min(Int(bitPattern: base) + range.count, Int(bitPattern: own) + bytes.count)
        // Whole pages only: the neighbours of a partial page may be in use.
        let start = (lower + page - 1) & ~(page - 1)
        let end = upper & ~(page - 1)
        guard end > start, let pointer = UnsafeMutableRawPointer(bitPattern: start) else { return }
        madvise(pointer, end - start, MADV_DONTNEED)
    }

    /// The whole file as mapped.
    package var fileBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(bytes) }

    /// CRC-32 of the whole file, as `.gnu_debuglink` records it; computed on first use.
    public var contentCRC: UInt32 { crc.get { DebugLink.crc32(UnsafeRawBufferPointer(bytes)) } }

    /// True when the file carries DWARF (`-g` build or a debug file).
    public var hasDebugInfo: Bool { section(named: ".debug_info") != nil || section(named: ".zdebug_info") != nil }

    // MARK: Parsing helpers

    private static func readBuildID(_ elf: OpaquePointer, bytes: UnsafeRawBufferPointer) -> String? {
        var section: OpaquePointer? = nil
        while let scn = elf_nextscn(elf, section) {
            section = scn
            var sh = GElf_Shdr()
            guard gelf_getshdr(scn, &sh) != nil, sh.sh_type == UInt32(SHT_NOTE),
                sh.sh_offset + sh.sh_size <= UInt64(bytes.count)
            else { continue }
            if let id = parseBuildIDNote(bytes, from: Int(sh.sh_offset), count: Int(sh.sh_size)) { return id }
        }
        // Section headers can be stripped; program headers cannot.
        var count = 0
        elf_getphdrnum(elf, &count)
        for index in 0..<count {
            var ph = GElf_Phdr()
            guard gelf_getphdr(elf, Int32(index), &ph) != nil, ph.p_type == UInt32(PT_NOTE),
                ph.p_offset + ph.p_filesz <= UInt64(bytes.count)
            else { continue }
            if let id = parseBuildIDNote(bytes, from: Int(ph.p_offset), count: Int(ph.p_filesz)) { return id }
        }
        return nil
    }

    static func parseBuildIDNote(_ bytes: UnsafeRawBufferPointer, from start: Int, count: Int) -> String? {
        var offset = start
        let end = start + count
        while offset + 12 <= end {
            let nameSize = Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            let descSize = Int(bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
            let type = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
            let nameStart = offset + 12
            let descStart = nameStart + ((nameSize + 3) & ~3)
            let next = descStart + ((descSize + 3) & ~3)
            guard next <= end, nameSize < 256, descSize < 4096 else { return nil }
            if type == 3, nameSize == 4, bytes[nameStart] == 0x47, bytes[nameStart + 1] == 0x4e,
                bytes[nameStart + 2] == 0x55
            {  // NT_GNU_BUILD_ID, "GNU\0"
                return bytes[descStart..<descStart + descSize].map { hexByte($0) }.joined()
            }
            offset = next
        }
        return nil
    }

    private static func hexByte(_ b: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(b >> 4)], digits[Int(b & 15)]])
    }

    /// Reads the header of `.eh_frame_hdr`. libunwind's table search only understands the
    /// usual encoding (datarel|sdata4 pairs), so anything else is treated as "no table".
    static func parseEhFrameHeader(
        bytes: UnsafeRawBufferPointer, offset: UInt64, size: UInt64, vaddr: UInt64
    ) -> EhFrameHeader? {
        guard size >= 12, offset + size <= UInt64(bytes.count) else { return nil }
        let o = Int(offset)
        let version = bytes[o]
        let framePtrEncoding = bytes[o + 1]
        let countEncoding = bytes[o + 2]
        let tableEncoding = bytes[o + 3]
        guard version == 1, tableEncoding == 0x3b else { return nil }
        guard let pointerSize = encodedSize(framePtrEncoding), let countSize = encodedSize(countEncoding)
        else { return nil }
        let countOffset = o + 4 + pointerSize
        guard countOffset + countSize <= o + Int(size) else { return nil }
        let fdeCount: UInt64
        switch countSize {
        case 4: fdeCount = UInt64(bytes.loadUnaligned(fromByteOffset: countOffset, as: UInt32.self))
        case 8: fdeCount = bytes.loadUnaligned(fromByteOffset: countOffset, as: UInt64.self)
        default: return nil
        }
        let tableOffset = UInt64(4 + pointerSize + countSize)
        guard fdeCount > 0, tableOffset + fdeCount * 8 <= size else { return nil }
        return EhFrameHeader(virtualAddress: vaddr, tableVirtualAddress: vaddr + tableOffset, fdeCount: fdeCount)
    }

    private static func encodedSize(_ encoding: UInt8) -> Int? {
        switch encoding & 0x0f {
        case 0x02, 0x0a: return 2
        case 0x03, 0x0b: return 4
        case 0x04, 0x0c: return 8
        default: return nil
        }
    }
}
