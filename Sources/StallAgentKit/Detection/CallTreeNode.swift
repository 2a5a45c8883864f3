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

    /// The tree cut `levels` below this node: the nodes there keep their counts but no
    /// children, and one child named `cutFunctionName` stands for the samples that went deeper.
    /// Foundation's JSON encoder refuses nesting past 512 (about 255 tree levels), which
    /// stacks with interpreter frames (a pytest run: 250+ frames) reach.
    public func limited(toDepth levels: Int) -> CallTreeNode {
        var copy = self
        if levels <= 0 {
            let deeper = count - selfCount
            copy.children = deeper > 0 ? [CallTreeNode(function: CallTreeNode.cutFunctionName, module: "", count: deeper, selfCount: deeper)] : []
        } else {
            copy.children = children.map { $0.limited(toDepth: levels - 1) }
        }
        return copy
    }

    /// Stands for the levels `limited(toDepth:)` cut.
    public static let cutFunctionName = "[deeper frames cut]"

    /// The function name of the synthetic root that holds the outermost frames.
    public static let rootFunctionName = "(root)"

    /// Builds the tree of `samples` under a synthetic root (`rootFunctionName`, empty module)
    /// whose count is the number of samples with at least one frame.
    public static func build<Samples: Sequence>(from samples: Samples) -> CallTreeNode
    where Samples.Element == StackSample {
        let builder = Builder(function: rootFunctionName, module: "")
        for sample in samples where !sample.frames.isEmpty {
            builder.count += 1
            var node = builder
            // Frames are innermost first; the tree is root-first.
            for frame in sample.frames.reversed() {
                node = node.child(function: frame.function, module: frame.module)
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
                function: function, module: module, count: count, selfCount: selfCount,
                children: ordered.map { $0.element.freeze() })
        }
    }
}
