import Foundation

/// `stallagent view`'s page: one self-contained HTML file (no network: style, script and data
/// inline) that opens from file:// and from a mail attachment. The reports travel as one JSON
/// blob in a `<script type="application/json">`, with `<` written `\u003c` so no name can
/// close that element; the script builds everything from it with textContent.
public enum HTMLReportRenderer {
    public static func render(_ collection: ReportCollection, generator: String, now: Date = Date()) throws -> Data {
        let page = try ViewPageDataBuilder.build(collection, generator: generator, now: now)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let blob = scriptSafe(try encoder.encode(page))
        var html = Data()
        html.append(
            Data(
                """
                <!DOCTYPE html>
                <html lang="en">
                <head>
                <meta charset="utf-8">
                <meta name="viewport" content="width=device-width, initial-scale=1">
                <meta name="generator" content="\(XMLText.escape(generator))">
                <title>\(XMLText.escape(page.title))</title>
                <style>
                \(ViewPageStyle.css)
                </style>
                <script>
                \(ViewPageScript.errorCatcher)
                </script>
                </head>
                <body>
                <header>
                  <h1 id="title">Stalls</h1>
                  <div id="subtitle"></div>
                  <div id="chips"></div>
                </header>
                <main>
                <section id="timeline-section">
                  <h2>Timeline <span class="hint">one row per process · hover a bar for its culprit, click it for the details · wheel to zoom, drag to pan, double-click to reset</span></h2>
                  <div id="timeline-wrap"><canvas id="timeline"></canvas></div>
                  <p class="note" id="loop-note" hidden></p>
                </section>
                <section id="stall" hidden>
                  <div id="stall-head"><span id="stall-badge"></span><span id="stall-title"></span><span id="stall-duration"></span></div>
                  <p id="stall-desc"></p>
                  <div class="cols">
                    <div><table class="kv" id="stall-facts"></table></div>
                    <div>
                      <h3 style="margin-top:0">Where the time went</h3>
                      <div id="states"></div><div id="states-legend"></div>
                      <h3>What watching cost the process</h3>
                      <table class="kv" id="agent"></table>
                      <h3>Process</h3>
                      <table class="kv" id="target"></table>
                    </div>
                  </div>
                  <h3>Flame graph <span class="hint">callers on top, width = samples · click a frame to zoom</span></h3>
                  <div id="flame-bar">
                    <input id="flame-search" type="search" placeholder="Search functions (regular expression)" autocomplete="off">
                    <button id="flame-reset" disabled>Reset zoom</button>
                    <span id="flame-matched"></span>
                  </div>
                  <div id="flame-wrap"><canvas id="flame"></canvas><p id="flame-empty" hidden>No stack samples in this report.</p></div>
                  <h3 id="heaviest-head">Heaviest stack</h3>
                  <table class="frames" id="heaviest"></table>
                  <div id="lock" hidden>
                    <h3 id="lock-head">Lock owner</h3>
                    <table class="kv" id="lock-facts"></table>
                    <table class="frames" id="lock-frames"></table>
                  </div>
                </section>
                <section>
                  <h2>Recurring stalls <span class="hint">by fingerprint (same stack, same reason) · seen = the agent's count, reports = files here · click for the worst</span></h2>
                  <table class="list">
                    <thead><tr><th>culprit</th><th>reason</th><th>seen</th><th>reports</th><th>total</th><th>worst</th><th>processes</th><th>fingerprint</th></tr></thead>
                    <tbody id="fingerprints-body"></tbody>
                  </table>
                  <button class="more" id="fingerprints-more" hidden></button>
                </section>
                <section>
                  <h2>All stalls <span class="hint">sort by <button id="sort-time">time</button> <button id="sort-duration">duration</button></span></h2>
                  <table class="list">
                    <thead><tr><th>start</th><th>process</th><th>reason</th><th>duration</th><th>culprit</th><th>source</th></tr></thead>
                    <tbody id="stalls-body"></tbody>
                  </table>
                  <button class="more" id="stalls-more" hidden></button>
                </section>
                </main>
                <footer>Written by \(XMLText.escape(generator)) from report files; nothing here was fetched from the network.</footer>
                <div id="tip" hidden></div>
                <pre id="selftest" hidden></pre>
                <script type="application/json" id="stall-data">
                """.utf8))
        html.append(blob)
        html.append(
            Data(
                """

                </script>
                <script>
                \(ViewPageScript.main)
                </script>
                </body>
                </html>

                """.utf8))
        return html
    }

    /// JSON that cannot end its `<script>` element or start a comment: every `<` (and, for
    /// old parsers, `>` and `&`) inside strings becomes a \u escape, which JSON.parse reads back
    /// as the same character. Outside strings JSON has none of these bytes.
    static func scriptSafe(_ json: Data) -> Data {
        var out = [UInt8]()
        out.reserveCapacity(json.count + json.count / 16)
        let escapes: [UInt8: [UInt8]] = [
            UInt8(ascii: "<"): Array("\\u003c".utf8), UInt8(ascii: ">"): Array("\\u003e".utf8), UInt8(ascii: "&"): Array("\\u0026".utf8),
        ]
        json.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            for byte in bytes {
                if byte == UInt8(ascii: "<") || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "&") {
                    out += escapes[byte]!
                } else {
                    out.append(byte)
                }
            }
        }
        return Data(out)
    }
}
