import StallDetection
import StallReports
import StallSymbols

/// A frame as the call tree and the folded stacks name it: function and module.
public struct StackFrameKey: Hashable, Sendable, Comparable {
    public var function: String
    public var module: String

    public init(function: String, module: String) {
        self.function = function
        self.module = module
    }

    public static func < (lhs: StackFrameKey, rhs: StackFrameKey) -> Bool {
        (lhs.function, lhs.module) < (rhs.function, rhs.module)
    }
}

/// One distinct stack of a stall and how many samples had it: a folded-stacks line.
public struct WeightedStack: Sendable, Equatable {
    /// Root first.
    public var frames: [StackFrameKey]
    public var samples: Int
}

/// A stall's samples as stacks, from its call tree: the tree keeps every sample still in the
/// ring (the folded stacks' samples) with function and module, which the folded file loses.
public struct StallStacks: Sendable {
    public var stacks: [WeightedStack]
    /// What the report knows of a frame beyond its name (source line, address, build-id),
    /// from the heaviest stack, the stall frame and the lock owner's stack.
    public var details: [StackFrameKey: SymbolizedFrame]

    public init(_ report: StallReport) {
        var stacks: [WeightedStack] = []
        var path: [StackFrameKey] = []
        func walk(_ node: CallTreeNode) {
            path.append(StackFrameKey(function: node.function, module: node.module))
            if node.selfCount > 0 { stacks.append(WeightedStack(frames: path, samples: node.selfCount)) }
            node.children.forEach(walk)
            path.removeLast()
        }
        report.callTree.children.forEach(walk)
        self.stacks = stacks
        var details: [StackFrameKey: SymbolizedFrame] = [:]
        let frames = [report.stallFrame].compactMap { $0 } + (report.heaviestStack?.frames ?? []) + (report.lockOwner?.frames ?? [])
        for frame in frames {
            guard let function = frame.function else { continue }
            let key = StackFrameKey(function: function, module: frame.module ?? "")
            if let known = details[key], known.file != nil || frame.file == nil { continue }
            details[key] = frame
        }
        self.details = details
    }

    public var totalSamples: Int { stacks.reduce(0) { $0 + $1.samples } }

    /// Samples whose innermost frame is each function: a flat profile (`pprof -top`'s flat).
    public var selfSamplesByFunction: [String: Int] {
        var counts: [String: Int] = [:]
        for stack in stacks { if let leaf = stack.frames.last { counts[leaf.function, default: 0] += stack.samples } }
        return counts
    }
}
