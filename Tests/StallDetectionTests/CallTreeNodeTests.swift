import DetectionTestSupport
import Testing

@testable import StallDetection

@Suite("CallTreeNode")
struct CallTreeNodeTests {
    private func sample(_ functions: String...) -> StackSample {
        StackSample(time: 0, activity: .running, frames: DetectionScenario.stack(functions))
    }

    @Test func countsArePerPathRootFirstAndSortedByCount() throws {
        let tree = CallTreeNode.build(from: [
            sample("c", "b", "a"),
            sample("d", "b", "a"),
            sample("e", "a"),
            sample("c", "b", "a"),
        ])
        #expect(tree.function == CallTreeNode.rootFunctionName)
        #expect(tree.count == 4)
        let a = try #require(tree.children.first)
        #expect(tree.children.count == 1)
        #expect(a.function == "a")
        #expect(a.count == 4)
        #expect(a.children.map(\.function) == ["b", "e"])
        #expect(a.children.map(\.count) == [3, 1])
        let b = a.children[0]
        #expect(b.children.map(\.function) == ["c", "d"])
        #expect(b.children.map(\.count) == [2, 1])
        #expect(b.children.map(\.selfCount) == [2, 1])
        #expect(b.selfCount == 0)
    }

    @Test func equalCountsKeepFirstSeenOrder() {
        let tree = CallTreeNode.build(from: [sample("z", "main"), sample("y", "main"), sample("x", "main")])
        #expect(tree.children.first?.children.map(\.function) == ["z", "y", "x"])
    }

    @Test func recursionNestsAndEmptySamplesAreSkipped() {
        let tree = CallTreeNode.build(from: [
            sample("f", "f", "f", "main"),
            StackSample(time: 0, activity: .running, frames: []),
        ])
        #expect(tree.count == 1)
        var depth = 0
        var node = tree.children.first
        while let current = node, current.function == "main" || current.function == "f" {
            depth += 1
            node = current.children.first
        }
        #expect(depth == 4)
    }

    @Test func sameFunctionInDifferentModulesStaysApart() {
        let tree = CallTreeNode.build(from: [
            StackSample(time: 0, activity: .running, frames: [SampledFrame(function: "init", module: "a.so")]),
            StackSample(time: 0, activity: .running, frames: [SampledFrame(function: "init", module: "b.so")]),
        ])
        #expect(tree.children.count == 2)
    }

    @Test func emptyInputGivesAnEmptyRoot() {
        let tree = CallTreeNode.build(from: [StackSample]())
        #expect(tree.count == 0)
        #expect(tree.children.isEmpty)
    }
}
