import StallDetection

/// Folded stacks (Brendan Gregg's format, what flamegraph.pl, inferno and speedscope read):
/// one line per distinct stack, root first, frames joined by ';', then a space and the number
/// of samples. Built from the samples still in the snapshot's ring.
public enum FoldedStackRenderer {
    public static func render(_ snapshot: StallSnapshot, resolve: (SampledFrame) -> String) -> String {
        var counts: [String: Int] = [:]
        for sample in snapshot.samples where !sample.frames.isEmpty {
            // Folded like the call tree, so a runaway recursion gives a bounded line.
            let (frames, folded) = CallTreeNode.depthLimited(Array(sample.frames.reversed()))
            let stack = frames.map { $0.map { sanitize(resolve($0)) } ?? CallTreeNode.foldedMarker(folded) }
                .joined(separator: ";")
            counts[stack, default: 0] += 1
        }
        // Sorted so the same samples always give the same file (flame graph tools sort anyway).
        return counts.keys.sorted().map { "\($0) \(counts[$0]!)\n" }.joined()
    }

    /// ';' separates frames and a newline ends the record, so neither may appear in a name;
    /// spaces may (the count is after the last one), which keeps C++ signatures readable.
    public static func sanitize(_ name: String) -> String {
        // Control characters (newlines too) become visible escapes; ';' cannot be escaped in
        // this format, so it is replaced.
        let text = TerminalSanitizer.line(name).replacingOccurrences(of: ";", with: ":")
        return text.isEmpty ? "[unknown]" : text
    }
}
