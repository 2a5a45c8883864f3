import StallProc

/// A file mapped into a target process: its mappings, its load bias and its ELF image.
public final class LoadedModule {
    public let path: String
    public let mappings: [MemoryMapEntry]
    public let image: ElfImage?
    /// Why `image` is nil when the file could not be trusted or did not answer.
    public let unavailable: ElfImageCache.Unavailable?
    /// Added to an ELF virtual address to get the address in the target.
    public let bias: UInt64
    /// Lowest and highest executable addresses, for choosing the module of a pc.
    public let textStart: UInt64
    public let textEnd: UInt64

    /// The name the process was started by, when that is a symlink to `path`.
    public let alias: String?

    /// The file's name (or `alias`). Stored: modules are looked up by name for every process
    /// a family attaches (is it Python, V8, libc?), and splitting the path each time was a
    /// ninth of the agent's work attaching 50 PostgreSQL backends.
    public let name: String
    public var start: UInt64 { mappings.first?.start ?? 0 }
    public var end: UInt64 { mappings.last?.end ?? 0 }

    init(
        path: String, mappings: [MemoryMapEntry], image: ElfImage?, alias: String? = nil,
        unavailable: ElfImageCache.Unavailable? = nil
    ) {
        self.unavailable = unavailable
        self.path = path
        self.alias = alias
        name = alias ?? path.split(separator: "/").last.map(String.init) ?? path
        self.mappings = mappings
        self.image = image
        var bias: UInt64 = 0
        if let image, let first = mappings.min(by: { $0.fileOffset < $1.fileOffset }) {
            // The mapping at file offset o starts at address a, and o sits at virtual address
            // v in its segment: bias = a - v. ld.so uses one bias for all segments.
            if let vaddr = image.virtualAddress(forFileOffset: first.fileOffset) {
                bias = first.start &- vaddr
            } else if first.fileOffset == 0, let lowest = image.segments.first {
                bias = first.start &- (lowest.virtualAddress & ~0xfff)
            }
        } else if let first = mappings.first {
            bias = first.start &- first.fileOffset
        }
        self.bias = bias
        let text = mappings.filter(\.executable)
        textStart = text.map(\.start).min() ?? 0
        textEnd = text.map(\.end).max() ?? 0
    }

    /// The module-relative address (ELF virtual address) of a target address.
    public func moduleOffset(of address: UInt64) -> UInt64 { address &- bias }

    /// True when `address` follows a call instruction in this module's code: what a return
    /// address on the stack must look like. Checks the encodings compilers emit on x86-64:
    /// call rel32 (E8), and indirect calls (FF /2) of 2 to 7 bytes.
    public func followsCallInstruction(_ address: UInt64) -> Bool {
        guard let image, mappings.contains(where: { $0.executable && $0.contains(address) }),
            let bytes = image.readBytes(atVirtualAddress: (address &- bias) &- 7, count: 7)
        else { return false }
        if bytes[2] == 0xE8 { return true }
        for length in 2...7 {
            let opcodeIndex = 7 - length
            guard bytes[opcodeIndex] == 0xFF, opcodeIndex + 1 < 7 else { continue }
            let modrm = bytes[opcodeIndex + 1]
            if (modrm >> 3) & 7 == 2 { return true }
        }
        return false
    }

    /// True when the instruction at `address` is a near return (`ret`, `rep ret`), read from
    /// the file.
    public func isReturnInstruction(_ address: UInt64) -> Bool {
        guard let image, mappings.contains(where: { $0.executable && $0.contains(address) }),
            let bytes = image.readBytes(atVirtualAddress: address &- bias, count: 2)
        else { return false }
        return bytes[0] == 0xC3 || (bytes[0] == 0xF3 && bytes[1] == 0xC3)
    }

    /// The target of the `call rel32` that ends just before `address`, or nil when the
    /// instruction there is not one (an indirect call names no target in its bytes).
    public func directCallTarget(returningTo address: UInt64) -> UInt64? {
        guard let image, let bytes = image.readBytes(atVirtualAddress: (address &- bias) &- 5, count: 5),
            bytes[0] == 0xE8
        else { return nil }
        let displacement = Int32(bitPattern: UInt32(bytes[1]) | UInt32(bytes[2]) << 8 | UInt32(bytes[3]) << 16 | UInt32(bytes[4]) << 24)
        return address &+ UInt64(bitPattern: Int64(displacement))
    }

    /// Reads a word of the module's file image at a target address.
    @inline(__always)
    package func readWord(at address: UInt64) -> UInt64? {
        image?.readWord(atVirtualAddress: address &- bias)
    }
}

extension LoadedModule {
    /// The version a runtime's file name carries, its first run of digits and dots
    /// (`php-fpm8.2`, `libphp8.2.so`: "8.2"; `libruby-3.1.so.3.1.2`: "3.1"); "" for none.
    package var versionInName: String {
        let digits = name.drop { !$0.isNumber }.prefix { $0.isNumber || $0 == "." }
        return String(digits.hasSuffix(".") ? digits.dropLast() : digits)
    }
}
