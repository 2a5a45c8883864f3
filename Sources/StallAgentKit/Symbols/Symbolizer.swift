/// Names the frames of an unwound stack using the process's modules. Runs with the target
/// running; results are cached per address because a stalled thread is sampled at the same
/// addresses again and again.
public final class Symbolizer {
    public private(set) var modules: ProcessModules
    private var cache: [UInt64: (name: String, offset: UInt64, approximate: Bool)?] = [:]

    public init(modules: ProcessModules) { self.modules = modules }

    public func update(modules: ProcessModules) {
        guard modules !== self.modules else { return }
        self.modules = modules
        cache = [:]
    }

    public func symbolize(_ stack: UnwoundStack) -> [SymbolizedFrame] {
        stack.frames.enumerated().map { index, frame in symbolize(frame, index: index) }
    }

    public func symbolize(_ frame: UnwoundFrame, index: Int) -> SymbolizedFrame {
        let lookup = frame.lookupAddress(isInnermost: index == 0)
        guard let module = modules.module(containing: lookup) else {
            return SymbolizedFrame(
                index: index, address: frame.address, stackPointer: frame.stackPointer, module: nil,
                modulePath: nil, buildId: nil, moduleOffset: nil, function: nil, functionOffset: nil,
                approximate: false, isSignalFrame: frame.isSignalFrame)
        }
        let symbol: (name: String, offset: UInt64, approximate: Bool)?
        if let cached = cache[lookup] {
            symbol = cached
        } else {
            symbol = module.image?.symbol(forVirtualAddress: module.moduleOffset(of: lookup)).map {
                (Demangler.demangle($0.name), $0.offset + (frame.address - lookup), $0.approximate)
            }
            if cache.count > 100_000 { cache.removeAll(keepingCapacity: true) }
            cache[lookup] = symbol
        }
        return SymbolizedFrame(
            index: index, address: frame.address, stackPointer: frame.stackPointer, module: module.name,
            modulePath: module.path, buildId: module.image?.buildID,
            moduleOffset: module.moduleOffset(of: frame.address), function: symbol?.name,
            functionOffset: symbol?.offset, approximate: symbol?.approximate ?? false,
            isSignalFrame: frame.isSignalFrame)
    }
}
