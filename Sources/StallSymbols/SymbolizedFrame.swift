/// One frame of a report: everything needed to read it now and to symbolicate it later on
/// another machine (build-id + module offset).
public struct SymbolizedFrame: Codable, Equatable, Sendable {
    public var index: Int
    public var address: UInt64
    public var stackPointer: UInt64
    public var module: String?
    public var modulePath: String?
    public var buildId: String?
    /// ELF virtual address within the module: what `addr2line -e MODULE` takes.
    public var moduleOffset: UInt64?
    public var function: String?
    public var functionOffset: UInt64?
    /// The name is a nearest-symbol guess (stripped binary: `.dynsym` only, or past the
    /// symbol's end).
    public var approximate: Bool
    public var file: String?
    public var line: Int?
    /// Functions inlined at this address, innermost first (from DWARF); empty without.
    public var inlined: [InlinedFrame]
    public var isSignalFrame: Bool
    /// "python" for an interpreter frame (a Python function spliced into the native stack);
    /// nil for machine code.
    public var language: String?
    /// The application's own code (`AppFrameRule`): what the culprit names. nil: not decided
    /// (a report from an agent before the rule, or a frame with nothing to go on).
    public var inApp: Bool?

    public static let pythonLanguage = "python"
    /// The module column of a Python frame: its file is in `file`.
    public static let pythonModule = "python"

    public var isPython: Bool { language == SymbolizedFrame.pythonLanguage }

    /// "javascript" for a V8 frame named by its JavaScript function (`V8FrameReader`).
    public static let javascriptLanguage = "javascript"
    /// The module column of a JavaScript frame: its script is in `file`.
    public static let javascriptModule = "js"

    public var isJavaScript: Bool { language == SymbolizedFrame.javascriptLanguage }

    /// A script's function (Python, JavaScript) rather than machine code: named by itself,
    /// with no module offset.
    public var isScript: Bool { language != nil }

    /// "debugCommand + 4420" / "libc.so.6 + 0x1234" / "0x7f…".
    public var displayName: String {
        if let function, isScript { return function }
        if let function {
            return "\(function) + \(functionOffset ?? 0)" + (approximate ? " (approximate)" : "")
        }
        if let module, let moduleOffset { return "\(module) + 0x\(String(moduleOffset, radix: 16))" }
        return "0x" + String(address, radix: 16)
    }

    enum CodingKeys: String, CodingKey {
        case index, address, stackPointer, module, modulePath, buildId, moduleOffset, function
        case functionOffset, approximate, file, line, inlined, isSignalFrame, language, inApp
    }

    public init(
        index: Int, address: UInt64, stackPointer: UInt64, module: String?, modulePath: String?,
        buildId: String?, moduleOffset: UInt64?, function: String?, functionOffset: UInt64?,
        approximate: Bool, file: String? = nil, line: Int? = nil, inlined: [InlinedFrame] = [],
        isSignalFrame: Bool = false, language: String? = nil
    ) {
        self.index = index
        self.address = address
        self.stackPointer = stackPointer
        self.module = module
        self.modulePath = modulePath
        self.buildId = buildId
        self.moduleOffset = moduleOffset
        self.function = function
        self.functionOffset = functionOffset
        self.approximate = approximate
        self.file = file
        self.line = line
        self.inlined = inlined
        self.isSignalFrame = isSignalFrame
        self.language = language
    }

    // Addresses are written as hex strings: JSON numbers lose precision past 2^53 in many
    // consumers, and people read addresses in hex.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(index, forKey: .index)
        try c.encode(SymbolizedFrame.hex(address), forKey: .address)
        try c.encode(SymbolizedFrame.hex(stackPointer), forKey: .stackPointer)
        try c.encode(module, forKey: .module)
        try c.encode(modulePath, forKey: .modulePath)
        try c.encode(buildId, forKey: .buildId)
        try c.encode(moduleOffset.map(SymbolizedFrame.hex), forKey: .moduleOffset)
        try c.encode(function, forKey: .function)
        try c.encode(functionOffset, forKey: .functionOffset)
        try c.encode(approximate, forKey: .approximate)
        try c.encodeIfPresent(file, forKey: .file)
        try c.encodeIfPresent(line, forKey: .line)
        if !inlined.isEmpty { try c.encode(inlined, forKey: .inlined) }
        if isSignalFrame { try c.encode(true, forKey: .isSignalFrame) }
        try c.encodeIfPresent(language, forKey: .language)
        try c.encodeIfPresent(inApp, forKey: .inApp)
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func hex(_ key: CodingKeys) throws -> UInt64? {
            guard let text = try c.decodeIfPresent(String.self, forKey: key) else { return nil }
            return SymbolizedFrame.parseHex(text)
        }
        index = try c.decode(Int.self, forKey: .index)
        address = try hex(.address) ?? 0
        stackPointer = try hex(.stackPointer) ?? 0
        module = try c.decodeIfPresent(String.self, forKey: .module)
        modulePath = try c.decodeIfPresent(String.self, forKey: .modulePath)
        buildId = try c.decodeIfPresent(String.self, forKey: .buildId)
        moduleOffset = try hex(.moduleOffset)
        function = try c.decodeIfPresent(String.self, forKey: .function)
        functionOffset = try c.decodeIfPresent(UInt64.self, forKey: .functionOffset)
        approximate = try c.decodeIfPresent(Bool.self, forKey: .approximate) ?? false
        file = try c.decodeIfPresent(String.self, forKey: .file)
        line = try c.decodeIfPresent(Int.self, forKey: .line)
        inlined = try c.decodeIfPresent([InlinedFrame].self, forKey: .inlined) ?? []
        isSignalFrame = try c.decodeIfPresent(Bool.self, forKey: .isSignalFrame) ?? false
        language = try c.decodeIfPresent(String.self, forKey: .language)
        inApp = try c.decodeIfPresent(Bool.self, forKey: .inApp)
    }

    /// The address to look symbols up at: a return address points after its call, which may
    /// be the first byte of the next function or line (same rule as `UnwoundFrame`).
    public var lookupOffset: UInt64? {
        guard let moduleOffset else { return nil }
        return index == 0 || isSignalFrame || moduleOffset == 0 ? moduleOffset : moduleOffset - 1
    }

    /// Replaces names and source with `lookup`'s (the offset is from `lookupOffset`).
    public mutating func apply(_ lookup: SymbolLookup) {
        function = lookup.function
        functionOffset = lookup.function == nil ? nil : lookup.offset + ((moduleOffset ?? 0) - (lookupOffset ?? 0))
        approximate = lookup.function == nil ? false : lookup.approximate
        file = lookup.file
        line = lookup.line
        inlined = lookup.inlined
    }

    public static func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }

    /// Reads what `hex` writes ("0x…", or bare hex digits).
    public static func parseHex(_ text: String) -> UInt64? {
        UInt64(text.hasPrefix("0x") ? String(text.dropFirst(2)) : text, radix: 16)
    }
}
