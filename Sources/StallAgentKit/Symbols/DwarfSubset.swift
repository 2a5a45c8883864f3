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
enum DwarfSubset {
    /// What `DwarfSourceInfo` reads through libdw: DIEs, abbreviations, line programs, strings
    /// and the range and address tables DWARF 4 and 5 refer to.
    static let wantedSections: Set<String> = [
        ".debug_info", ".debug_abbrev", ".debug_line", ".debug_str", ".debug_line_str", ".debug_str_offsets",
        ".debug_addr", ".debug_ranges", ".debug_rnglists", ".debug_aranges",
    ]

    /// Refuses to inflate more than this (a corrupt or hostile header could claim anything).
    static let maxInflatedBytes: UInt64 = 1 << 30

    private struct Piece {
        var name: String
        var header: GElf_Shdr
        /// The stored bytes (compressed ones after their Elf64_Chdr).
        var stored: UnsafeRawBufferPointer
        var compressed: Bool
        var size: UInt64
        var alignment: UInt64
        var offset = 0
    }

    /// The subset image of `image`, or nil when there is nothing worth it (no compressed
    /// debug section) or the file is something this does not handle (relocatable objects,
    /// GNU `.zdebug`, a dwz supplementary file, zstd, a corrupt stream): libdw then reads the
    /// file itself, as before.
    static func image(from image: ElfImage) -> ElfImage? {
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
        guard anyCompressed, pieces.contains(where: { $0.name == ".debug_info" }) else { return nil }

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
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: byteCount, alignment: 64)
        var ok = true
        defer { if !ok { buffer.deallocate() } }

        // .debug_info is most of the work: inflate it beside the others.
        let infoIndex = pieces.firstIndex { $0.name == ".debug_info" }!
        let results = UnsafeMutableBufferPointer<Bool>.allocate(capacity: 2)
        results.initialize(repeating: false)
        defer { results.deallocate() }
        let work = Work(pieces: pieces, buffer: buffer, results: results, infoIndex: infoIndex, file: image)
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            var good = true
            for (index, piece) in work.pieces.enumerated() where (index == work.infoIndex) == (worker == 0) {
                let target = UnsafeMutableRawBufferPointer(rebasing: work.buffer[piece.offset..<piece.offset + Int(piece.size)])
                if !copyOrInflate(piece, into: target, file: work.file) { good = false }
            }
            work.results[worker] = good
        }
        guard results[0], results[1] else {
            ok = false
            return nil
        }

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
        // On failure the image has freed the buffer already.
        return try? ElfImage(adopting: buffer, path: image.path + " (DWARF)")
    }

    /// The two workers write disjoint byte ranges of the buffer and one result slot each, and
    /// `concurrentPerform` returns only when both are done.
    private struct Work: @unchecked Sendable {
        var pieces: [Piece]
        var buffer: UnsafeMutableRawBufferPointer
        var results: UnsafeMutableBufferPointer<Bool>
        var infoIndex: Int
        var file: ElfImage
    }

    /// Copies a stored section, or inflates a compressed one, filling `target` exactly. The
    /// compressed bytes are dropped from memory as they are consumed (they are not read
    /// again): libc's 3.6 MB would otherwise stay in the agent's RSS beside what they inflate to.
    private static func copyOrInflate(_ piece: Piece, into target: UnsafeMutableRawBufferPointer, file: ElfImage) -> Bool {
        guard piece.compressed else {
            guard piece.stored.count == target.count else { return false }
            target.copyMemory(from: piece.stored)
            return true
        }
        // A zlib stream: a two-byte header (deflate, no preset dictionary), raw deflate, a
        // checksum. Raw inflation skips computing the checksum.
        let cmf = piece.stored[0]
        let flags = piece.stored[1]
        guard cmf & 0x0f == 8, (UInt16(cmf) << 8 | UInt16(flags)) % 31 == 0, flags & 0x20 == 0 else { return false }
        let input = UnsafeRawBufferPointer(rebasing: piece.stored[2...])
        guard target.count > 0, input.count <= Int(UInt32.max), let inputBase = input.baseAddress else { return false }
        var stream = z_stream()
        guard inflateInit2_(&stream, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return false }
        defer { inflateEnd(&stream) }
        stream.next_in = UnsafeMutablePointer(mutating: inputBase.assumingMemoryBound(to: Bytef.self))
        stream.avail_in = UInt32(input.count)
        stream.next_out = target.baseAddress!.assumingMemoryBound(to: Bytef.self)
        var written = 0
        var status = Z_OK
        // A megabyte of output at a time, releasing the input consumed so far after each.
        while status == Z_OK && written < target.count {
            let step = min(target.count - written, 1 << 20)
            stream.avail_out = UInt32(step)
            status = inflate(&stream, Z_NO_FLUSH)
            written += step - Int(stream.avail_out)
            // From the start each time: pages already dropped cost nothing, and a page cut by
            // the previous step's end is dropped once it is wholly consumed.
            file.releasePages(UnsafeRawBufferPointer(start: inputBase, count: input.count - Int(stream.avail_in)))
        }
        if status == Z_OK && written == target.count {
            // Full: the stream must end here, not hold more than its header said.
            stream.avail_out = 0
            status = inflate(&stream, Z_FINISH)
        }
        return status == Z_STREAM_END && written == target.count
    }
}
