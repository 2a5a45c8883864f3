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
}
