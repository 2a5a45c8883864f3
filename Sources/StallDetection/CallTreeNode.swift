/// A node of the call tree built from a set of stack samples, root-first: each node counts the
/// samples whose stack passes through this path, so the report can show where time went below
/// the heaviest stack. Nodes are keyed by function and module only (not addresses), so samples
/// taken at different lines of one function merge; recursion shows as nested nodes.
public struct CallTreeNode: Hashable, Codable, Sendable {
    public var function: String
    public var module: String
    /// Samples whose stack passes through this node.
    public var count: Int
    /// Samples whose innermost frame is this node (time spent in the function itself).
    public var selfCount: Int
    /// Sorted by `count`, descending; equal counts keep first-seen order, so the tree is
    /// deterministic for a given sample sequence.
    public var children: [CallTreeNode]

    public init(function: String, module: String, count: Int, selfCount: Int = 0, children: [CallTreeNode] = []) {
        self.function = function
        self.module = module
        self.count = count
        self.selfCount = selfCount
        self.children = children
    }

    /// The function name of the synthetic root that holds the outermost frames.
    public static let rootFunctionName = "(root)"

    /// Levels a tree keeps below its root. Deeper stacks (runaway recursion, a classic stall)
    /// keep their outermost and innermost frames with one marker node between them, so every
    /// format stays within what encoders and readers nest (JSON decoders stop at 512 levels).
    public static let maxDepth = 96
    /// Innermost frames kept below the marker of a folded stack: the work in progress.
    public static let keptInnermostLevels = 32
    /// The marker's function name starts with this; it ends with "N levels folded".
    public static let foldedMarkerPrefix = "… "

    /// The marker's name for `count` folded levels.
    public static func foldedMarker(_ count: Int) -> String { "\(foldedMarkerPrefix)\(count) levels folded" }

    /// `frames` (root first) cut to `maxDepth`: the outermost ones, then nil (the marker's
    /// place), then the innermost `keptInnermostLevels`; the number of frames folded.
    public static func depthLimited<Frame>(_ frames: [Frame], maxDepth: Int = maxDepth) -> (frames: [Frame?], folded: Int) {
        guard frames.count > maxDepth else { return (frames.map { Optional($0) }, 0) }
        let inner = min(keptInnermostLevels, maxDepth / 2)
        let outer = maxDepth - inner - 1
        let folded = frames.count - outer - inner
        let kept: [Frame?] = frames[..<outer].map { Optional($0) } + [nil] + frames[(frames.count - inner)...].map { Optional($0) }
        return (kept, folded)
    }

    /// Builds the tree of `samples` under a synthetic root (`rootFunctionName`, empty module)
    /// whose count is the number of samples with at least one frame. Stacks deeper than
    /// `maxDepth` are folded in the middle (`depthLimited`).
    public static func build<Samples: Sequence>(from samples: Samples, maxDepth: Int = maxDepth) -> CallTreeNode
    where Samples.Element == StackSample {
        let builder = Builder(function: rootFunctionName, module: "")
        for sample in samples where !sample.frames.isEmpty {
            builder.count += 1
            var node = builder
            // Frames are innermost first; the tree is root-first.
            let (frames, folded) = depthLimited(Array(sample.frames.reversed()), maxDepth: maxDepth)
            for frame in frames {
                if let frame {
                    node = node.child(function: frame.function, module: frame.module)
                } else {
                    node = node.child(function: foldedMarkerPrefix, module: "")
                    node.folded = max(node.folded, folded)
                }
                node.count += 1
            }
            node.selfCount += 1
        }
        return builder.freeze()
    }

    /// Depth-first search for the first node with this function name (root included).
    public func first(function name: String) -> CallTreeNode? {
        if function == name { return self }
        for child in children {
            if let found = child.first(function: name) { return found }
        }
        return nil
    }

    /// A mutable reference-typed node, so that building is one pass without copying subtrees.
    private final class Builder {
        struct Key: Hashable {
            var function: String
            var module: String
        }

        let function: String
        let module: String
        var count = 0
        var selfCount = 0
        /// For a folded-levels marker: the most levels it stands for.
        var folded = 0
        var children: [Builder] = []
        var index: [Key: Int] = [:]

        init(function: String, module: String) {
            self.function = function
            self.module = module
        }

        func child(function: String, module: String) -> Builder {
            let key = Key(function: function, module: module)
            if let position = index[key] { return children[position] }
            let node = Builder(function: function, module: module)
            index[key] = children.count
            children.append(node)
            return node
        }

        func freeze() -> CallTreeNode {
            // Sorting the enumerated pairs keeps equal counts in first-seen order even though
            // Swift's sort is not guaranteed stable.
            let ordered = children.enumerated().sorted { lhs, rhs in
                lhs.element.count != rhs.element.count ? lhs.element.count > rhs.element.count : lhs.offset < rhs.offset
            }
            return CallTreeNode(
                function: folded > 0 ? CallTreeNode.foldedMarker(folded) : function, module: module, count: count, selfCount: selfCount,
                children: ordered.map { $0.element.freeze() })
        }
    }
}
