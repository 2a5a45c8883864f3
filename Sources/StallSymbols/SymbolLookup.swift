/// What one module says about one address: names demangled, source from DWARF.
public struct SymbolLookup: Equatable, Sendable {
    /// Demangled function name, or nil when no symbol covers the address.
    public var function: String?
    /// Bytes from the function's start to the looked-up address.
    public var offset: UInt64
    public var approximate: Bool
    public var file: String?
    public var line: Int?
    public var inlined: [InlinedFrame]

    public init(
        function: String?, offset: UInt64, approximate: Bool, file: String? = nil, line: Int? = nil,
        inlined: [InlinedFrame] = []
    ) {
        self.function = function
        self.offset = offset
        self.approximate = approximate
        self.file = file
        self.line = line
        self.inlined = inlined
    }

    public var isEmpty: Bool { function == nil && file == nil && inlined.isEmpty }
}
