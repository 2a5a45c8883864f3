import Foundation
import Testing

@testable import StallDetection

/// Stacks with interpreter frames are deep (a pytest run: 250+ frames) and Foundation's JSON
/// encoder refuses nesting past ~255 tree levels: the tree keeps its outer and inner frames
/// around one folded node, so the report always encodes.
@Suite struct CallTreeDepthTests {
    @Test func aDeepStackFoldsSoTheReportEncodes() throws {
        let frames = (0..<400).map { SampledFrame(function: "f\($0)", module: "m", cfa: UInt64($0)) }
        let tree = CallTreeNode.build(from: [StackSample(time: 0, activity: .running, frames: frames)])
        _ = try JSONEncoder().encode(tree)
        var node = tree
        var depth = 0
        var names: [String] = []
        while let child = node.children.first {
            node = child
            depth += 1
            names.append(node.function)
        }
        #expect(depth <= CallTreeNode.maxDepth + 1)
        #expect(
            names.contains(CallTreeNode.foldedMarker(400 - CallTreeNode.maxDepth + 1))
                || names.contains { $0.hasPrefix(CallTreeNode.foldedMarkerPrefix) }, "\(names)")
        // Outermost and innermost survive: where the program started and where it is stuck.
        #expect(names.first == "f399")
        #expect(names.last == "f0")
    }
}
