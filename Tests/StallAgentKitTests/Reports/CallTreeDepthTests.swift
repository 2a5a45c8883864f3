import Foundation
import Testing

@testable import StallAgentKit

/// Stacks with interpreter frames are deep (a pytest run: 250+ frames); Foundation's JSON
/// encoder refuses nesting past 512, so the report's call tree is cut at a depth it accepts.
@Suite struct CallTreeDepthTests {
    @Test func aDeepTreeIsCutSoTheReportEncodes() throws {
        let frames = (0..<400).map { SampledFrame(function: "f\($0)", module: "m", cfa: UInt64($0)) }
        let tree = CallTreeNode.build(from: [StackSample(time: 0, activity: .running, frames: frames)])
        #expect(throws: (any Error).self) { try JSONEncoder().encode(tree) }
        let cut = tree.limited(toDepth: StallReport.maxCallTreeDepth)
        _ = try JSONEncoder().encode(cut)
        var node = cut
        var depth = 0
        while let child = node.children.first {
            node = child
            depth += 1
        }
        #expect(depth == StallReport.maxCallTreeDepth + 1)
        #expect(node.function == CallTreeNode.cutFunctionName)
        #expect(node.count == 1)
    }
}
