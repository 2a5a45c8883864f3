/// Sizing a kernel sample's stack copy from its unwind: here, above Capture/, so that Capture/
/// does not depend on the unwinder's types.
extension PerfStackSampler {
    public func fit(_ snapshot: ThreadSnapshot, _ unwound: UnwoundStack) {
        let reachedEnd = unwound.end == .complete || unwound.end == .truncatedAtLimit
        fit(
            snapshot, copyTooShort: unwound.end == .outsideCopiedStack,
            outermostStackPointer: reachedEnd ? unwound.frames.last?.stackPointer : nil)
    }
}
