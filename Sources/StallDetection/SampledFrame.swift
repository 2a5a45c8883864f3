/// One frame of a captured stack as detection needs it (already symbolized by the agent).
///
/// Detection groups and compares frames by `function` (and `module`), never by `address`, so
/// that the same code reached through different return addresses still matches; `cfa` tells
/// apart two activations of the same function (recursion, or a function called again).
public struct SampledFrame: Hashable, Codable, Sendable {
    /// Symbol name, or "module+0xOFF" when unknown.
    public var function: String
    /// Module file name.
    public var module: String
    /// PC (frame 0) or return address.
    public var address: UInt64
    /// The frame's stack address (SP at that frame); identifies the activation.
    public var cfa: UInt64
    /// "python" for an interpreter frame (function = qualified name, cfa = the interpreter
    /// frame's address); nil for machine code.
    public var language: String?
    /// The application's own code rather than a library or runtime (decided by the agent from
    /// the frame's module, file and the user's `--app-frames`); nil: not decided.
    public var isApp: Bool?
    /// Where in its function the frame is: the address's offset from the symbol (machine code)
    /// or the line (Python). The same call site gives the same value in every process of a
    /// build, whatever its load address: what tells two stalls in one function apart.
    public var site: Int?

    public init(
        function: String, module: String, address: UInt64 = 0, cfa: UInt64 = 0, language: String? = nil, isApp: Bool? = nil,
        site: Int? = nil
    ) {
        self.function = function
        self.module = module
        self.address = address
        self.cfa = cfa
        self.language = language
        self.isApp = isApp
        self.site = site
    }

    /// A function the program's author wrote in an interpreted language: what culprits,
    /// stall frames and fingerprints prefer over the interpreter's own C frames.
    public var isInterpreted: Bool { language != nil }

    /// The C runtime, the loader and the vDSO, by module name: wrappers around the call, never
    /// the work. Culprit frames (reports) and fingerprints both skip them.
    static let systemModulePrefixes = [
        "libc.so", "libc-", "libpthread", "ld-linux", "ld64.so", "linux-vdso", "[vdso]", "libm.so", "libstdc++",
        "libgcc_s", "libdl.so", "librt.so",
    ]

    public static func isSystemModule(_ module: String) -> Bool {
        systemModulePrefixes.contains(where: module.hasPrefix)
    }
}
