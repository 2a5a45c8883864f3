/// A function inlined into a frame's code at its address, from DWARF: innermost first. The
/// frame's own `function`/`file`/`line` are the real (outermost) function and the line in
/// it; each inlined entry has its own name and the line inside it.
public struct InlinedFrame: Codable, Equatable, Sendable {
    public var function: String?
    public var file: String?
    public var line: Int?

    public init(function: String?, file: String?, line: Int?) {
        self.function = function
        self.file = file
        self.line = line
    }
}
