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

    public init(function: String, module: String, address: UInt64 = 0, cfa: UInt64 = 0) {
        self.function = function
        self.module = module
        self.address = address
        self.cfa = cfa
    }

    /// The C runtime, the loader and the vDSO, by module name: wrappers around the call, never
    /// the work. Culprit frames (reports) and fingerprints both skip them.
    static let systemModulePrefixes = [
        "libc.so", "libc-", "libpthread", "ld-linux", "ld64.so", "linux-vdso", "[vdso]", "libm.so", "libstdc++",
        "libgcc_s", "libdl.so", "librt.so",
    ]

    static func isSystemModule(_ module: String) -> Bool {
        systemModulePrefixes.contains(where: module.hasPrefix)
    }
}
