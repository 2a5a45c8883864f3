import Foundation
import StallReports

/// A self-contained interactive flame graph (icicle: callers on top), like flamegraph.pl's and
/// inferno's: every frame is an SVG rectangle with its name and a tooltip, so it reads without
/// script; the inline script adds click-to-zoom, search and reset. Target names only ever
/// appear as escaped XML text, never inside the script.
public enum FlameGraphSVGRenderer {
    static let width = 1200.0
    static let frameHeight = 18.0
    static let top = 56.0
    static let side = 10.0
    /// Narrower frames are left out, as flamegraph.pl does: they would draw nothing.
    static let minimumWidth = 0.1

    public static func render(_ collection: ReportCollection) -> String {
        let reports = collection.reports.map(\.report)
        let rootName = reports.count == 1 ? ViewNames.stallTitle(reports[0]) : "all \(reports.count) stalls"
        let tree = FlameTree.merging(reports, rootName: rootName)
        let title = reports.count == 1 ? "Stall flame graph" : "Stall flame graph: \(reports.count) stalls in \(collection.source)"
        return render(tree, title: title)
    }

    public static func render(_ tree: FlameTree, title: String) -> String {
        let total = max(tree.samples, 1)
        let scale = (width - 2 * side) / Double(total)
        let height = top + Double(tree.depth) * frameHeight + 30
        var body = ""
        var count = 0
        func draw(_ node: FlameTree, start: Int, depth: Int) {
            let w = Double(node.samples) * scale
            guard w >= minimumWidth else { return }
            count += 1
            let x = side + Double(start) * scale
            let y = top + Double(depth) * frameHeight
            let percent = String(format: "%.2f", Double(node.samples) * 100 / Double(total))
            let module = node.frame.module.isEmpty ? "" : " (\(node.frame.module))"
            let label = node.frame.function + module
            let tip = "\(label)\n\(node.samples) sample\(node.samples == 1 ? "" : "s") (\(percent) %), \(node.selfSamples) in the function itself"
            body += "<g class=\"f\" data-x=\"\(start)\" data-w=\"\(node.samples)\" data-d=\"\(depth)\">"
            body += "<title>\(XMLText.escape(tip))</title>"
            body += String(format: "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" rx=\"2\" ", x, y, w, frameHeight - 1)
            body += "fill=\"\(colour(node.frame))\"/>"
            body += String(format: "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + frameHeight - 5.5)
            body += XMLText.escape(fitted(label, width: w)) + "</text></g>\n"
            var offset = start
            for child in node.children {
                draw(child, start: offset, depth: depth + 1)
                offset += child.samples
            }
        }
        draw(tree, start: 0, depth: 0)
        let heading = XMLText.escape(title)
        return """
            <?xml version="1.0" encoding="UTF-8" standalone="no"?>
            <svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" data-total="\(total)" data-frames="\(count)" data-frame-height="\(frameHeight)" \
            data-top="\(top)" data-side="\(side)">
            <style>
            text { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; fill: #1b1b1b; }
            .f { cursor: pointer; }
            .f:hover rect { stroke: #222; stroke-width: 0.8; }
            .f.hit rect { fill: #e040fb; }
            .f.dim rect { opacity: 0.45; }
            .ui { cursor: pointer; fill: #2757b7; font-family: sans-serif; font-size: 13px; }
            .ui.off { display: none; }
            #heading { font-family: sans-serif; font-size: 17px; font-weight: 600; }
            #details, #matched { font-family: sans-serif; font-size: 12px; fill: #444; }
            </style>
            <rect x="0" y="0" width="100%" height="100%" fill="#fbfaf7"/>
            <text id="heading" x="\(Int(side))" y="24">\(heading)</text>
            <text id="reset" class="ui off" x="\(Int(side))" y="46">⟲ Reset zoom</text>
            <text id="search" class="ui" x="\(Int(width - side - 150))" y="46">Search (Ctrl-F)</text>
            <text id="clear" class="ui off" x="\(Int(width - side - 40))" y="46">Clear</text>
            <text id="matched" x="\(Int(width - side - 320))" y="46"></text>
            <text id="details" x="\(Int(side))" y="\(Int(height - 10))">Click a frame to zoom in; hover for its samples.</text>
            <g id="frames">
            \(body)</g>
            <script type="text/ecmascript"><![CDATA[
            \(FlameGraphSVGScript.source)
            ]]></script>
            </svg>

            """
    }

    /// What fits at ~7 px per character, with ".." for a cut, as flamegraph.pl draws it.
    static func fitted(_ label: String, width: Double) -> String {
        let fits = Int((width - 6) / 7.2)
        if fits < 3 { return "" }
        if label.count <= fits { return label }
        return String(label.prefix(fits - 2)) + ".."
    }

    /// Warm colours, the same for a name in every graph: flamegraph.pl's "hot" palette, keyed
    /// by the name rather than random, and cooler for system libraries so the program's own
    /// frames stand out.
    static func colour(_ frame: StackFrameKey) -> String {
        var hash: UInt32 = 2_166_136_261
        for byte in frame.function.utf8 {
            hash = (hash ^ UInt32(byte)) &* 16_777_619
        }
        let v1 = Double(hash & 0xff) / 255
        let v2 = Double((hash >> 8) & 0xff) / 255
        let v3 = Double((hash >> 16) & 0xff) / 255
        if frame.module.hasPrefix("libc.so") || frame.module.hasPrefix("ld-linux") || frame.module == "[vdso]" || frame.module.isEmpty {
            return String(format: "rgb(%d,%d,%d)", 190 + Int(40 * v1), 160 + Int(50 * v2), 120 + Int(40 * v3))
        }
        return String(format: "rgb(%d,%d,%d)", 205 + Int(50 * v3), Int(190 * v1), Int(55 * v2))
    }
}
