/// The page's style sheet: light, dense, readable on a laptop at 3 a.m.
enum ViewPageStyle {
    static let css = #"""
        :root { --ink: #1d1d1f; --muted: #6b6b70; --line: #e4e1da; --paper: #fbfaf7; --card: #ffffff; --accent: #2757b7; }
        * { box-sizing: border-box; }
        body { margin: 0; background: var(--paper); color: var(--ink); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; }
        header { padding: 18px 28px 10px; border-bottom: 1px solid var(--line); background: var(--card); }
        h1 { margin: 0; font-size: 21px; font-weight: 650; letter-spacing: -0.01em; }
        h2 { font-size: 15px; margin: 0 0 8px; font-weight: 650; }
        h3 { font-size: 13px; margin: 18px 0 6px; font-weight: 650; color: #333; text-transform: uppercase; letter-spacing: 0.04em; }
        #subtitle { color: var(--muted); font-size: 12.5px; margin-top: 3px; overflow-wrap: anywhere; }
        #chips { margin-top: 10px; display: flex; flex-wrap: wrap; gap: 8px; }
        .chip { border: 1px solid var(--line); border-radius: 999px; padding: 2px 10px 2px 8px; font-size: 12.5px; background: #fff; }
        .chip b { margin: 0 2px; }
        .chip code { color: var(--muted); font-size: 11.5px; }
        .dot { display: inline-block; width: 10px; height: 10px; border-radius: 3px; margin-right: 5px; vertical-align: -1px; }
        main { padding: 14px 28px 40px; max-width: 1500px; }
        section { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; margin-bottom: 16px; }
        .hint { color: var(--muted); font-size: 12px; font-weight: 400; margin-left: 8px; }
        .note { color: #8a5a00; background: #fff7e6; border: 1px solid #f3dfb3; border-radius: 6px; padding: 5px 9px; font-size: 12.5px; margin: 8px 0 0; }
        #timeline-wrap { overflow-y: auto; max-height: 420px; }
        canvas { display: block; }
        #stall-head { display: flex; align-items: baseline; gap: 12px; flex-wrap: wrap; }
        #stall-badge { color: #fff; font: 600 13px ui-monospace, "DejaVu Sans Mono", monospace; padding: 3px 9px; border-radius: 6px; }
        #stall-title { font-size: 17px; font-weight: 650; }
        #stall-duration { font-size: 17px; color: var(--muted); }
        #stall-desc { margin: 6px 0 10px; color: #333; }
        table { border-collapse: collapse; width: 100%; }
        table.kv th { text-align: left; vertical-align: top; color: var(--muted); font-weight: 500; width: 130px; padding: 2px 10px 2px 0; white-space: nowrap; }
        table.kv td { padding: 2px 0; overflow-wrap: anywhere; }
        .culprit { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 14px; }
        .src, .path { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; color: #41546b; overflow-wrap: anywhere; }
        table.frames th, table.list th { text-align: left; font-weight: 600; font-size: 12px; color: var(--muted); border-bottom: 1px solid var(--line); padding: 4px 8px 4px 0; }
        table.frames td, table.list td { padding: 3px 8px 3px 0; border-bottom: 1px solid #f1efe9; vertical-align: top; }
        table.frames td.fn, table.list td.fn { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; overflow-wrap: anywhere; }
        table.frames td.mod { color: var(--muted); font-size: 12px; }
        tr.inlined td { color: var(--muted); font-style: italic; }
        td.num { font-variant-numeric: tabular-nums; white-space: nowrap; color: #333; }
        td.code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; white-space: nowrap; }
        tr.click { cursor: pointer; }
        tr.click:hover td { background: #f6f4ee; }
        tr.sel td { background: #fff1cc; }
        #flame-bar { display: flex; gap: 10px; align-items: center; margin-bottom: 6px; }
        #flame-search { font: inherit; padding: 3px 8px; border: 1px solid #ccc; border-radius: 6px; width: 260px; }
        button { font: inherit; font-size: 12.5px; padding: 3px 10px; border: 1px solid #ccc; border-radius: 6px; background: #fff; cursor: pointer; }
        button:disabled { opacity: 0.45; cursor: default; }
        #flame-matched { color: #a02a9c; font-size: 12.5px; }
        #flame-empty { color: var(--muted); font-style: italic; }
        #states { display: flex; height: 12px; border-radius: 4px; overflow: hidden; background: #eee; max-width: 640px; }
        #states .seg { display: block; height: 100%; }
        #states-legend { display: flex; flex-wrap: wrap; gap: 14px; font-size: 12.5px; margin-top: 5px; color: #333; }
        .cols { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 24px; }
        @media (max-width: 1000px) { .cols { grid-template-columns: minmax(0, 1fr); } }
        .more { margin-top: 8px; }
        #tip { position: fixed; z-index: 10; pointer-events: none; background: #1d1d1f; color: #f5f5f5; padding: 6px 9px; border-radius: 6px;
               font-size: 12px; max-width: 560px; box-shadow: 0 4px 14px rgba(0,0,0,0.25); overflow-wrap: anywhere; }
        #tip .tip-head { font-weight: 650; }
        footer { color: var(--muted); font-size: 12px; padding: 0 28px 24px; }
        """#
}
