import StallDetection

/// The "Call Tree:" section: root-first, indented, with sample counts. A full tree of a few
/// hundred samples can run to thousands of lines, so it is pruned to what a reader can take in
/// (the JSON keeps the whole tree); every cut is marked with what it hid.
enum CallTreeTextRenderer {
    struct Limits {
        /// Levels printed below the root.
        var maxDepth = 40
        /// Children printed per node, heaviest first.
        var maxChildren = 6
        /// Children with fewer samples than this share of the whole tree are folded.
        var minFraction = 0.02
    }

    static func header(_ tree: CallTreeNode, limits: Limits = Limits()) -> String {
        "Call Tree (\(tree.count) samples, root first, [self] = samples in the function itself; pruned to "
            + "\(limits.maxDepth) levels and \(limits.maxChildren) branches per frame, "
            + "branches under \(Int(limits.minFraction * 100)) % folded into \"…\"):"
    }

    static func lines(_ tree: CallTreeNode, limits: Limits = Limits(), indent: String = "  ") -> [String] {
        let minCount = max(1, Int((Double(tree.count) * limits.minFraction).rounded(.up)))
        var out: [String] = []
        func visit(_ node: CallTreeNode, depth: Int) {
            // Recursion with no branching prints as one line: the depth limit would otherwise
            // spend itself on copies of one frame and cut off the leaf that matters.
            var node = node
            var repeats = 1
            while node.children.count == 1, let child = node.children.first, child.function == node.function,
                child.module == node.module, child.count == node.count
            {
                node = child
                repeats += 1
            }
            let pad = String(repeating: indent, count: depth + 1)
            var line = "\(pad)\(node.count) \(node.function)" + (node.module.isEmpty ? "" : "  (\(node.module))")
            if repeats > 1 { line += " ×\(repeats) (recursion)" }
            if node.selfCount > 0 { line += " [self \(node.selfCount)]" }
            out.append(line)
            guard !node.children.isEmpty else { return }
            if depth + 1 >= limits.maxDepth {
                let below = node.count - node.selfCount
                out.append("\(pad)\(indent)… deeper frames omitted (\(below) samples)")
                return
            }
            visitChildren(of: node, depth: depth + 1)
        }
        func visitChildren(of node: CallTreeNode, depth: Int) {
            let shown = node.children.prefix(limits.maxChildren).filter { $0.count >= minCount }
            for child in shown { visit(child, depth: depth) }
            let hidden = node.children.count - shown.count
            if hidden > 0 {
                let samples = node.children.map(\.count).reduce(0, +) - shown.map(\.count).reduce(0, +)
                let noun = hidden == 1 ? "branch" : "branches"
                out.append(String(repeating: indent, count: depth + 1) + "… \(hidden) more \(noun) (\(samples) samples)")
            }
        }
        visitChildren(of: tree, depth: 0)
        return out
    }
}
