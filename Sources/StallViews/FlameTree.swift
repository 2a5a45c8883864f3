import StallReports

/// Stacks merged into one tree, children by weight: what a flame graph draws.
public final class FlameTree {
    public let frame: StackFrameKey
    public private(set) var samples = 0
    public private(set) var selfSamples = 0
    public private(set) var children: [FlameTree] = []
    private var index: [StackFrameKey: Int] = [:]

    public init(frame: StackFrameKey) {
        self.frame = frame
    }

    public static func merging(_ reports: [StallReport], rootName: String) -> FlameTree {
        let root = FlameTree(frame: StackFrameKey(function: rootName, module: ""))
        for report in reports {
            for stack in StallStacks(report).stacks { root.add(stack) }
        }
        root.sort()
        return root
    }

    func add(_ stack: WeightedStack) {
        samples += stack.samples
        var node = self
        for key in stack.frames {
            let child: FlameTree
            if let position = node.index[key] {
                child = node.children[position]
            } else {
                child = FlameTree(frame: key)
                node.index[key] = node.children.count
                node.children.append(child)
            }
            child.samples += stack.samples
            node = child
        }
        node.selfSamples += stack.samples
    }

    /// Heaviest first; equal weights by name, so the same reports always draw the same picture.
    func sort() {
        children.sort { $0.samples != $1.samples ? $0.samples > $1.samples : $0.frame < $1.frame }
        index = [:]
        children.forEach { $0.sort() }
    }

    public var depth: Int { 1 + (children.map(\.depth).max() ?? 0) }
}
