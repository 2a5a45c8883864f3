import CLibdw
import CLibelf

#if canImport(Glibc)
import Glibc
#endif

/// Source lines and inlined functions from one file's DWARF, through libdw. The unit index
/// is built from each unit's address ranges rather than `.debug_aranges`, which clang and
/// swiftc do not emit. Not thread-safe: `ModuleSymbols` serialises calls.
final class DwarfSourceInfo {
    struct Location {
        var file: String?
        var line: Int?
        var inlined: [InlinedFrame]
        /// The enclosing subprogram, for files that have DWARF but no symbols.
        var function: String?
        var functionStart: UInt64?
    }

    private let image: ElfImage
    /// Compressed DWARF, inflated as far as lookups need (see `DwarfSubset`); nil when libdw
    /// reads the file itself.
    private let subset: DwarfSubset?
    private var dwarfHandle: OpaquePointer?
    /// The subset's generation `dwarfHandle` was opened at.
    private var handleGeneration = -1
    private var units: [(start: UInt64, end: UInt64, die: Dwarf_Die)] = []
    private var unitsIndexed = false
    private var fileTables: [UInt64: (files: OpaquePointer, count: Int)] = [:]

    /// Nil when libdw cannot read the file's DWARF (absent, corrupt, unsupported).
    /// `subset: false` hands libdw the whole file (to check the subset against it).
    init?(image: ElfImage, subset: Bool = true) {
        self.image = image
        self.subset = subset ? DwarfSubset.make(from: image) : nil
        if self.subset == nil {
            // libdw inflates every compressed section it reads, whatever its size: the sizes
            // claimed are held in the agent's budget first, or the file is read without DWARF.
            let claimed = DwarfSubset.claimedInflatedBytes(image)
            guard InflationBudget.shared.reserve(claimed, for: image.path) else { return nil }
            held = claimed
            guard let elf = image.elf, let dwarf = dwarf_begin_elf(elf, DWARF_C_READ, nil) else {
                InflationBudget.shared.release(claimed)
                held = 0
                return nil
            }
            dwarfHandle = dwarf
        }
    }

    /// Bytes of `InflationBudget.shared` held for libdw's own inflating.
    private var held = 0

    deinit {
        if let dwarfHandle { dwarf_end(dwarfHandle) }
        InflationBudget.shared.release(held)
    }

    /// How much of a compressed `.debug_info` lookups have inflated so far; nil when libdw
    /// reads the file itself.
    var infoInflated: (bytes: Int, of: Int)? { subset?.infoInflated }

    /// The libdw handle over what is inflated now: made again when the subset grew, since
    /// libdw sized its sections when it opened them. DIEs and file tables of the old handle
    /// are dropped with it.
    private func currentDwarf() -> OpaquePointer? {
        guard let subset else { return dwarfHandle }
        if let dwarfHandle, handleGeneration == subset.generation { return dwarfHandle }
        if let dwarfHandle { dwarf_end(dwarfHandle) }
        dwarfHandle = nil
        fileTables = [:]
        handleGeneration = subset.generation
        guard let elf = subset.elf() else { return nil }
        dwarfHandle = dwarf_begin_elf(elf, DWARF_C_READ, nil)
        return dwarfHandle
    }

    /// The unit holding `address`: through `.debug_aranges`, inflating a compressed file only
    /// through that unit; else by every unit's own ranges (clang and swiftc write no
    /// `.debug_aranges`), with all of it inflated.
    private func unit(for address: UInt64) -> Dwarf_Die? {
        if !unitsIndexed, let subset, let offset = subset.prepare(for: address), let dwarf = currentDwarf() {
            var next: Dwarf_Off = 0
            var headerSize = 0
            var die = Dwarf_Die()
            if dwarf_nextcu(dwarf, offset, &next, &headerSize, nil, nil, nil) == 0,
                dwarf_offdie(dwarf, offset + UInt64(headerSize), &die) != nil,
                [Int32(DW_TAG_compile_unit), Int32(DW_TAG_partial_unit)].contains(dwarf_tag(&die)),
                Self.ranges(of: &die, contain: address)
            {
                return die
            }
        }
        if !unitsIndexed {
            unitsIndexed = true
            if let subset, !subset.prepareAll() { return nil }
            guard let dwarf = currentDwarf() else { return nil }
            indexUnits(dwarf)
        }
        return unit(containing: address)
    }

    /// The unit's own ranges hold `address`: a table naming another unit (an odd producer, a
    /// corrupt file) must not lend it its lines; the full index decides then.
    private static func ranges(of die: inout Dwarf_Die, contain address: UInt64) -> Bool {
        var offset = 0
        var base: Dwarf_Addr = 0
        var start: Dwarf_Addr = 0
        var end: Dwarf_Addr = 0
        for _ in 0..<100_000 {
            offset = dwarf_ranges(&die, offset, &base, &start, &end)
            if offset <= 0 { return false }
            if address >= start && address < end { return true }
        }
        return false
    }

    private func indexUnits(_ dwarf: OpaquePointer) {
        var unit: OpaquePointer? = nil
        var next: OpaquePointer? = nil
        var unitType: UInt8 = 0
        var die = Dwarf_Die()
        // Corrupt DWARF could loop or list absurd numbers of ranges: bound both.
        var remaining = 1_000_000
        while remaining > 0, dwarf_get_units(dwarf, unit, &next, nil, &unitType, &die, nil) == 0 {
            unit = next
            remaining -= 1
            guard unitType == UInt8(DW_UT_compile) || unitType == UInt8(DW_UT_partial) else { continue }
            var offset: Int = 0
            var base: Dwarf_Addr = 0
            var start: Dwarf_Addr = 0
            var end: Dwarf_Addr = 0
            while remaining > 0 {
                offset = dwarf_ranges(&die, offset, &base, &start, &end)
                if offset <= 0 { break }
                remaining -= 1
                if end > start { units.append((start, end, die)) }
            }
        }
        units.sort { $0.start < $1.start }
    }

    private func unit(containing address: UInt64) -> Dwarf_Die? {
        let low = units.countStarting(atOrBelow: address) { $0.start }
        // Ranges of different units may nest in odd producers; look back a little.
        var index = low - 1
        while index >= 0 && index >= low - 8 {
            if address >= units[index].start && address < units[index].end { return units[index].die }
            index -= 1
        }
        return nil
    }

    func locate(_ address: UInt64) -> Location? {
        guard var cu = unit(for: address) else { return nil }
        var location = Location(inlined: [])
        if let line = dwarf_getsrc_die(&cu, address) {
            location.file = dwarf_linesrc(line, nil, nil).map { String(cString: $0) }
            var number: Int32 = 0
            if dwarf_lineno(line, &number) == 0, number > 0 { location.line = Int(number) }
        }
        var scopes: UnsafeMutablePointer<Dwarf_Die>? = nil
        let count = dwarf_getscopes(&cu, address, &scopes)
        defer { free(scopes) }
        guard count > 0, let scopes else { return location.file == nil ? nil : location }
        var file = location.file
        var line = location.line
        for index in 0..<Int(count) {
            var scope = scopes[index]
            let tag = dwarf_tag(&scope)
            if tag == Int32(DW_TAG_inlined_subroutine) {
                location.inlined.append(InlinedFrame(function: Self.name(of: &scope), file: file, line: line))
                file = callFile(of: &scope, unit: &cu)
                line = Self.unsigned(&scope, UInt32(DW_AT_call_line)).map { Int($0) }
            } else if tag == Int32(DW_TAG_subprogram) {
                location.function = Self.name(of: &scope)
                var low: Dwarf_Addr = 0
                if dwarf_lowpc(&scope, &low) == 0 { location.functionStart = low }
                break
            }
        }
        location.file = file
        location.line = line
        return location
    }

    /// The linkage (mangled) name when there is one, demangled: DW_AT_name alone lacks the
    /// C++ namespace and the Swift module.
    private static func name(of die: inout Dwarf_Die) -> String? {
        var attribute = Dwarf_Attribute()
        for code in [DW_AT_linkage_name, DW_AT_MIPS_linkage_name] {
            if dwarf_attr_integrate(&die, UInt32(code), &attribute) != nil, let text = dwarf_formstring(&attribute) {
                return Demangler.demangle(String(cString: text))
            }
        }
        return dwarf_diename(&die).map { String(cString: $0) }
    }

    private static func unsigned(_ die: inout Dwarf_Die, _ code: UInt32) -> UInt64? {
        var attribute = Dwarf_Attribute()
        var value: Dwarf_Word = 0
        guard dwarf_attr(&die, code, &attribute) != nil, dwarf_formudata(&attribute, &value) == 0 else { return nil }
        return value
    }

    private func callFile(of die: inout Dwarf_Die, unit: inout Dwarf_Die) -> String? {
        guard let index = Self.unsigned(&die, UInt32(DW_AT_call_file)) else { return nil }
        let key = dwarf_dieoffset(&unit)
        let table: (files: OpaquePointer, count: Int)
        if let cached = fileTables[key] {
            table = cached
        } else {
            var files: OpaquePointer? = nil
            var count = 0
            guard dwarf_getsrcfiles(&unit, &files, &count) == 0, let files else { return nil }
            table = (files, count)
            fileTables[key] = table
        }
        guard index < UInt64(table.count), let name = dwarf_filesrc(table.files, Int(index), nil, nil) else {
            return nil
        }
        return String(cString: name)
    }
}
