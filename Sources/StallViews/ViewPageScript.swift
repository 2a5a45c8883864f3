/// The page's script. Every name from the report (process, function, file, argv) reaches the
/// page through textContent, an attribute or canvas text, never as markup.
enum ViewPageScript {
    /// Runs first, on its own: a syntax error in the main script is then still recorded in
    /// the page (`data-errors`), where a headless test can read it.
    static let errorCatcher = #"""
        window.stallErrors = [];
        window.addEventListener("error", function (e) {
          window.stallErrors.push(String(e.message) + (e.lineno ? " (line " + e.lineno + ")" : ""));
          document.body && document.body.setAttribute("data-errors", JSON.stringify(window.stallErrors));
        });
        window.addEventListener("unhandledrejection", function (e) { window.stallErrors.push("unhandled rejection: " + String(e.reason)); });
        (function () {
          var original = console.error;
          console.error = function () {
            window.stallErrors.push("console.error: " + Array.prototype.map.call(arguments, String).join(" "));
            return original.apply(console, arguments);
          };
        })();
        """#

    static let main = #"""
        (function () {
          "use strict";
          var started = performance.now();
          var data = JSON.parse(document.getElementById("stall-data").textContent);
          var parseMs = performance.now() - started;
          var S = data.strings, stalls = data.stalls, targets = data.targets;
          var COLORS = { hang: "#d9483b", lock: "#8e44ad", deadlock: "#4a1363", io: "#2f7fc8", blocked: "#e39a1c",
                         starved: "#1f9a8a", died: "#3b3b3b", snapshot: "#9aa0a6" };
          function color(reason) { return COLORS[reason] || "#777"; }
          function $(id) { return document.getElementById(id); }
          function el(tag, cls, text) {
            var e = document.createElement(tag);
            if (cls) e.className = cls;
            if (text !== undefined && text !== null) e.textContent = String(text);
            return e;
          }
          function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
          function str(i) { return i >= 0 ? S[i] : ""; }
          function dur(s) {
            if (s < 1) return Math.round(s * 1000) + " ms";
            if (s < 60) return s.toFixed(2) + " s";
            return Math.floor(s / 60) + " min " + Math.round(s % 60) + " s";
          }
          function pad(n) { return (n < 10 ? "0" : "") + n; }
          function clock(ms, withDate) {
            var d = new Date(ms);
            var t = pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
            return withDate ? d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + t : t;
          }
          function stamp(ms) {
            var d = new Date(ms);
            return clock(ms, true) + "." + String(d.getMilliseconds()).padStart(3, "0");
          }
          function dpr() { return window.devicePixelRatio || 1; }
          function sizeCanvas(canvas, w, h) {
            var r = dpr();
            canvas.width = Math.round(w * r); canvas.height = Math.round(h * r);
            canvas.style.width = w + "px"; canvas.style.height = h + "px";
            var ctx = canvas.getContext("2d");
            ctx.setTransform(r, 0, 0, r, 0, 0);
            return ctx;
          }
          function fitText(ctx, text, width) {
            if (width < 14) return "";
            if (ctx.measureText(text).width <= width) return text;
            var lo = 0, hi = text.length;
            while (lo < hi) {
              var mid = (lo + hi + 1) >> 1;
              if (ctx.measureText(text.slice(0, mid) + "…").width <= width) lo = mid; else hi = mid - 1;
            }
            return lo > 0 ? text.slice(0, lo) + "…" : "";
          }
          var tip = $("tip");
          function showTip(lines, x, y) {
            clear(tip);
            lines.forEach(function (line, i) { tip.appendChild(el("div", i === 0 ? "tip-head" : "", line)); });
            tip.hidden = false;
            var w = tip.offsetWidth, h = tip.offsetHeight;
            var left = Math.min(x + 14, window.innerWidth - w - 8), top = y + 16;
            if (top + h > window.innerHeight - 4) top = y - h - 10;
            tip.style.left = Math.max(4, left) + "px"; tip.style.top = Math.max(4, top) + "px";
          }
          function hideTip() { tip.hidden = true; }

          // ---- header ----
          document.title = data.title;
          $("title").textContent = data.title;
          var first = Infinity, last = -Infinity;
          stalls.forEach(function (s) { if (s.start < first) first = s.start; if (s.end > last) last = s.end; });
          targets.forEach(function (t) {
            (t.health || []).forEach(function (h) { first = Math.min(first, h[0] - h[1] * 1000); last = Math.max(last, h[0]); });
          });
          var multiDay = last - first > 20 * 3600 * 1000;
          $("subtitle").textContent = stalls.length + (stalls.length === 1 ? " stall" : " stalls") + " in " + targets.length +
            (targets.length === 1 ? " process" : " processes") + ", " + clock(first, true) + " – " + clock(last, multiDay) +
            " · from " + data.source + " · " + data.generator;
          var byReason = {};
          stalls.forEach(function (s) { byReason[s.reason] = (byReason[s.reason] || 0) + 1; });
          var chips = $("chips");
          data.reasons.forEach(function (r) {
            if (!byReason[r.name]) return;
            var chip = el("span", "chip");
            chip.title = r.meaning;
            var dot = el("span", "dot"); dot.style.background = color(r.name);
            chip.appendChild(dot);
            chip.appendChild(el("b", "", byReason[r.name]));
            chip.appendChild(document.createTextNode(" " + r.name + " "));
            chip.appendChild(el("code", "", r.code));
            chips.appendChild(chip);
          });
          if (data.loopHealthNote) { $("loop-note").textContent = data.loopHealthNote; $("loop-note").hidden = false; }

          // ---- timeline ----
          var tl = { canvas: $("timeline"), t0: first, t1: Math.max(last, first + 1000), rows: [], bars: [], labelW: 210, rowH: 26, axisH: 26,
                     healthH: 36, tops: [] };
          // A row with loop health is taller: its stall bars, then busy share and turns/s.
          function rowHeight(r) { return tl.rowH + (targets[r].health ? tl.healthH : 0); }
          (function () {
            var pad = (tl.t1 - tl.t0) * 0.02;
            tl.full0 = tl.t0 - pad; tl.full1 = tl.t1 + pad;
            tl.v0 = tl.full0; tl.v1 = tl.full1;
            targets.forEach(function () { tl.rows.push([]); });
            stalls.forEach(function (s, i) { tl.rows[s.t].push(i); });
          })();
          function tlX(ms) { return tl.labelW + (ms - tl.v0) / (tl.v1 - tl.v0) * tl.plotW; }
          function niceStep(span, px) {
            var steps = [100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5, 72e5, 216e5, 432e5, 864e5];
            var want = span / Math.max(1, px / 110);
            for (var i = 0; i < steps.length; i++) if (steps[i] >= want) return steps[i];
            return steps[steps.length - 1];
          }
          function drawTimeline() {
            var wrap = $("timeline-wrap");
            var width = Math.max(480, wrap.clientWidth);
            var height = tl.axisH + 6;
            tl.tops = [];
            tl.rows.forEach(function (row, r) { tl.tops.push(height - 6); height += rowHeight(r); });
            tl.plotW = width - tl.labelW - 12;
            var ctx = sizeCanvas(tl.canvas, width, height);
            ctx.clearRect(0, 0, width, height);
            ctx.font = "12px system-ui, sans-serif";
            ctx.textBaseline = "middle";
            var step = niceStep(tl.v1 - tl.v0, tl.plotW);
            var tick = Math.ceil(tl.v0 / step) * step;
            ctx.strokeStyle = "#e7e4dc"; ctx.fillStyle = "#6b6b6b"; ctx.lineWidth = 1;
            for (; tick <= tl.v1; tick += step) {
              var x = Math.round(tlX(tick)) + 0.5;
              ctx.beginPath(); ctx.moveTo(x, tl.axisH - 4); ctx.lineTo(x, height); ctx.stroke();
              ctx.textAlign = "center";
              var text = step >= 864e5 || multiDay && step >= 36e5 ? clock(tick, true) : clock(tick);
              if (step < 1000) text += "." + String(new Date(tick).getMilliseconds()).padStart(3, "0");
              var half = ctx.measureText(text).width / 2;
              // A label that would be cut at either edge is left out; its grid line stays.
              if (x - half >= tl.labelW && x + half <= width - 2) ctx.fillText(text, x, tl.axisH / 2);
            }
            tl.bars = [];
            tl.rows.forEach(function (row, r) {
              var y = tl.tops[r];
              if (r % 2 === 0) { ctx.fillStyle = "rgba(0,0,0,0.025)"; ctx.fillRect(0, y, width, rowHeight(r)); }
              if (targets[r].health) drawHealth(ctx, targets[r], y + tl.rowH, width);
              ctx.fillStyle = "#222"; ctx.textAlign = "left";
              ctx.fillText(fitText(ctx, targets[r].label, tl.labelW - 16), 8, y + tl.rowH / 2);
              var lastX = -1, lastReason = null;
              row.forEach(function (i) {
                var s = stalls[i];
                if (s.end < tl.v0 || s.start > tl.v1) return;
                var x0 = Math.max(tl.labelW, tlX(s.start)), x1 = Math.min(tl.labelW + tl.plotW, tlX(s.end));
                var w = Math.max(3, x1 - x0);
                tl.bars.push({ i: i, x: x0, y: y + 4, w: w, h: tl.rowH - 8 });
                // Thousands of stalls on one pixel column draw once: the page stays fast.
                if (Math.floor(x0) === lastX && s.reason === lastReason && w <= 3) return;
                lastX = Math.floor(x0); lastReason = s.reason;
                ctx.fillStyle = color(s.reason);
                ctx.fillRect(x0, y + 4, w, tl.rowH - 8);
                if (w > 70) {
                  // Wide enough to say what it was without hovering.
                  var said = fitText(ctx, dur(s.duration) + " " + (s.culprit || s.reason), w - 8);
                  if (said) { ctx.fillStyle = "#fff"; ctx.textAlign = "left"; ctx.fillText(said, x0 + 4, y + tl.rowH / 2); }
                }
              });
            });
            if (selected >= 0) {
              var b = tl.bars.filter(function (b) { return b.i === selected; })[0];
              if (b) {
                ctx.strokeStyle = "#111"; ctx.lineWidth = 2;
                ctx.strokeRect(b.x - 2, b.y - 2, b.w + 4, b.h + 4);
              }
            }
            $("timeline-section").setAttribute("data-bars", String(tl.bars.length));
          }
          // Busy share as a shaded area (0-100 % of the lane), turns per second as a line
          // scaled to the row's highest.
          function drawHealth(ctx, t, y, width) {
            var h = tl.healthH - 6, maxTurns = 0;
            t.health.forEach(function (p) { maxTurns = Math.max(maxTurns, p[2] / Math.max(p[1], 0.001)); });
            ctx.save();
            ctx.beginPath(); ctx.rect(tl.labelW, y, tl.plotW, h + 2); ctx.clip();
            ctx.fillStyle = "rgba(217,72,59,0.28)";
            t.health.forEach(function (p) {
              var x0 = tlX(p[0] - p[1] * 1000), x1 = tlX(p[0]);
              var busy = Math.min(1, p[3] / Math.max(p[1], 0.001));
              ctx.fillRect(x0, y + h * (1 - busy), Math.max(1, x1 - x0), h * busy);
            });
            if (maxTurns > 0) {
              ctx.strokeStyle = "#2757b7"; ctx.lineWidth = 1.5; ctx.beginPath();
              t.health.forEach(function (p, k) {
                var x = tlX(p[0] - p[1] * 500), v = p[2] / Math.max(p[1], 0.001);
                var yy = y + h * (1 - v / maxTurns);
                if (k === 0) ctx.moveTo(x, yy); else ctx.lineTo(x, yy);
              });
              ctx.stroke();
            }
            ctx.restore();
            ctx.font = "11px system-ui, sans-serif"; ctx.textAlign = "left";
            ctx.fillStyle = "#b03a2e"; ctx.fillText("busy %", 8, y + h / 2 - 6);
            ctx.fillStyle = "#2757b7"; ctx.fillText("turns/s ≤ " + Math.round(maxTurns), 8, y + h / 2 + 8);
            ctx.font = "12px system-ui, sans-serif";
          }
          function healthAt(x, y) {
            for (var r = 0; r < targets.length; r++) {
              var t = targets[r], top = tl.tops[r] + tl.rowH;
              if (!t.health || y < top || y > top + tl.healthH || x < tl.labelW) continue;
              var at = tl.v0 + (x - tl.labelW) / tl.plotW * (tl.v1 - tl.v0);
              for (var k = 0; k < t.health.length; k++) {
                var p = t.health[k];
                if (at >= p[0] - p[1] * 1000 && at <= p[0]) return { t: t, p: p };
              }
            }
            return null;
          }
          function barAt(x, y) {
            var best = null, bestDist = 5;
            for (var k = 0; k < tl.bars.length; k++) {
              var b = tl.bars[k];
              if (y < b.y - 2 || y > b.y + b.h + 2) continue;
              var d = x < b.x ? b.x - x : x > b.x + b.w ? x - b.x - b.w : 0;
              if (d < bestDist || d === bestDist && best && stalls[b.i].duration > stalls[best.i].duration) { best = b; bestDist = d; }
            }
            return best;
          }
          function canvasPoint(canvas, e) {
            var rect = canvas.getBoundingClientRect();
            return { x: e.clientX - rect.left, y: e.clientY - rect.top };
          }
          var drag = null;
          tl.canvas.addEventListener("mousemove", function (e) {
            var p = canvasPoint(tl.canvas, e);
            if (drag) {
              var shift = (p.x - drag.x) / tl.plotW * (drag.v1 - drag.v0);
              if (Math.abs(p.x - drag.x) > 3) drag.moved = true;
              tl.v0 = drag.v0 - shift; tl.v1 = drag.v1 - shift;
              drawTimeline(); return;
            }
            var b = barAt(p.x, p.y);
            tl.canvas.style.cursor = b ? "pointer" : "grab";
            if (!b) {
              var hp = healthAt(p.x, p.y);
              if (!hp) { hideTip(); return; }
              var q = hp.p, span = Math.max(q[1], 0.001);
              showTip([hp.t.label + " · " + clock(q[0] - q[1] * 1000) + " – " + clock(q[0]),
                       (q[2] / span).toFixed(1) + " turns/s · busy " + Math.round(100 * Math.min(1, q[3] / span)) + " %",
                       "longest turn " + (q[4] > 0 ? dur(q[4]) : "—") + (hp.t.evidence ? " · turns from the " + hp.t.evidence : "")],
                      e.clientX, e.clientY);
              return;
            }
            var s = stalls[b.i];
            showTip([s.code + " " + s.reason + " · " + dur(s.duration) + (s.ongoing ? " (ongoing)" : ""),
                     (s.culprit || "no stack") + (s.culpritAt ? "  " + s.culpritAt : ""),
                     targets[s.t].label + " · #" + s.id + " · " + stamp(s.start)], e.clientX, e.clientY);
          });
          tl.canvas.addEventListener("mouseleave", function () { hideTip(); drag = null; });
          tl.canvas.addEventListener("mousedown", function (e) {
            var p = canvasPoint(tl.canvas, e);
            drag = { x: p.x, v0: tl.v0, v1: tl.v1, moved: false };
          });
          window.addEventListener("mouseup", function () { setTimeout(function () { drag = null; }, 0); });
          tl.canvas.addEventListener("click", function (e) {
            if (drag && drag.moved) return;
            var p = canvasPoint(tl.canvas, e);
            var b = barAt(p.x, p.y);
            if (b) select(b.i, true);
          });
          tl.canvas.addEventListener("wheel", function (e) {
            var p = canvasPoint(tl.canvas, e);
            if (p.x < tl.labelW) return;
            e.preventDefault();
            var at = tl.v0 + (p.x - tl.labelW) / tl.plotW * (tl.v1 - tl.v0);
            var factor = e.deltaY > 0 ? 1.25 : 0.8;
            var span = Math.max(200, (tl.v1 - tl.v0) * factor);
            var ratio = (at - tl.v0) / (tl.v1 - tl.v0);
            tl.v0 = at - ratio * span; tl.v1 = tl.v0 + span;
            drawTimeline();
          }, { passive: false });
          tl.canvas.addEventListener("dblclick", function () { tl.v0 = tl.full0; tl.v1 = tl.full1; drawTimeline(); });

          // ---- flame graph (icicle: callers on top) ----
          var fl = { canvas: $("flame"), root: null, zoom: null, nodes: [], rowH: 18, query: null, drawn: 0 };
          function decodeTree(flat) {
            var pos = 0;
            function node(depth, x) {
              var n = { fn: str(flat[pos]), mod: str(flat[pos + 1]), count: flat[pos + 2], self: flat[pos + 3], depth: depth, x: x, children: [] };
              var kids = flat[pos + 4];
              pos += 5;
              var cx = x;
              for (var k = 0; k < kids; k++) { var c = node(depth + 1, cx); c.parent = n; n.children.push(c); cx += c.count; }
              return n;
            }
            return flat.length ? node(0, 0) : null;
          }
          function hash(text) {
            var h = 2166136261;
            for (var i = 0; i < text.length; i++) { h ^= text.charCodeAt(i); h = Math.imul(h, 16777619) >>> 0; }
            return h;
          }
          var SYSTEM = /^(libc\.so|libpthread|ld-linux|libm\.so|\[vdso\])/;
          function frameColor(n) {
            var h = hash(n.fn), a = (h & 255) / 255, b = ((h >> 8) & 255) / 255, c = ((h >> 16) & 255) / 255;
            if (n.depth === 0) return "#c9c4b8";
            if (!n.mod || SYSTEM.test(n.mod)) return "rgb(" + (190 + (40 * a | 0)) + "," + (165 + (45 * b | 0)) + "," + (125 + (40 * c | 0)) + ")";
            return "rgb(" + (215 + (40 * c | 0)) + "," + (70 + (130 * a | 0)) + "," + (40 + (45 * b | 0)) + ")";
          }
          function label(n) { return n.depth === 0 ? "all samples" : n.fn + (n.mod ? " (" + n.mod + ")" : ""); }
          function maxDepth(n) { var d = n.depth; n.children.forEach(function (c) { d = Math.max(d, maxDepth(c)); }); return d; }
          function drawFlame() {
            var canvas = fl.canvas, root = fl.root;
            var width = Math.max(320, $("flame-wrap").clientWidth);
            fl.nodes = []; fl.drawn = 0;
            if (!root || root.count === 0) {
              sizeCanvas(canvas, width, 30).clearRect(0, 0, width, 30);
              canvas.setAttribute("data-nodes", "0");
              $("flame-empty").hidden = false;
              return;
            }
            $("flame-empty").hidden = true;
            var z = fl.zoom || root;
            var depth = maxDepth(root) + 1;
            var ctx = sizeCanvas(canvas, width, depth * fl.rowH + 2);
            ctx.font = "12px ui-monospace, 'DejaVu Sans Mono', Menlo, monospace";
            ctx.textBaseline = "middle";
            var scale = width / z.count;
            var re = null;
            if (fl.query) { try { re = new RegExp(fl.query, "i"); } catch (err) { re = null; } }
            var matched = 0;
            function visit(n, matchedAbove) {
              var inside = n.x >= z.x && n.x + n.count <= z.x + z.count && n.depth >= z.depth;
              var above = n.depth < z.depth;
              if (!inside && !above) return;
              var x = inside ? (n.x - z.x) * scale : 0, w = inside ? n.count * scale : width;
              if (w < 0.4) return;
              var y = n.depth * fl.rowH;
              var hit = fl.query && n.depth > 0 && (re ? re.test(n.fn) || re.test(n.mod) : n.fn.indexOf(fl.query) >= 0);
              if (hit && !matchedAbove && inside) matched += n.count;
              ctx.globalAlpha = above ? 0.55 : 1;
              ctx.fillStyle = hit ? "#d63bd1" : frameColor(n);
              ctx.fillRect(x + 0.5, y + 0.5, Math.max(0.5, w - 1), fl.rowH - 1);
              ctx.globalAlpha = 1;
              var text = fitText(ctx, label(n), w - 6);
              if (text) { ctx.fillStyle = "#161616"; ctx.fillText(text, x + 3, y + fl.rowH / 2 + 0.5); }
              fl.nodes.push({ n: n, x: x, y: y, w: w });
              fl.drawn++;
              n.children.forEach(function (c) { visit(c, matchedAbove || hit); });
            }
            visit(root, false);
            canvas.setAttribute("data-nodes", String(fl.drawn));
            $("flame-reset").disabled = !fl.zoom;
            $("flame-matched").textContent = fl.query ? "matched " + (matched * 100 / z.count).toFixed(1) + " % of the samples shown" : "";
          }
          function flameNodeAt(x, y) {
            for (var k = fl.nodes.length - 1; k >= 0; k--) {
              var f = fl.nodes[k];
              if (x >= f.x && x < f.x + f.w && y >= f.y && y < f.y + fl.rowH) return f.n;
            }
            return null;
          }
          fl.canvas.addEventListener("mousemove", function (e) {
            var p = canvasPoint(fl.canvas, e), n = flameNodeAt(p.x, p.y);
            fl.canvas.style.cursor = n ? "pointer" : "default";
            if (!n) { hideTip(); return; }
            var total = fl.root.count;
            showTip([label(n), n.count + " of " + total + " samples (" + (n.count * 100 / total).toFixed(1) + " %)",
                     n.self + " in the function itself" + (n.children.length ? "; click to zoom" : "")], e.clientX, e.clientY);
          });
          fl.canvas.addEventListener("mouseleave", hideTip);
          fl.canvas.addEventListener("click", function (e) {
            var p = canvasPoint(fl.canvas, e), n = flameNodeAt(p.x, p.y);
            if (!n) return;
            fl.zoom = n.depth === 0 || n === fl.zoom ? null : n;
            drawFlame();
          });
          $("flame-reset").addEventListener("click", function () { fl.zoom = null; drawFlame(); });
          $("flame-search").addEventListener("input", function (e) { fl.query = e.target.value || null; drawFlame(); });

          // ---- the selected stall ----
          var selected = -1;
          function kv(table, key, value, cls) {
            if (value === undefined || value === null || value === "") return;
            var tr = el("tr");
            tr.appendChild(el("th", "", key));
            var td = el("td", cls || "");
            if (value instanceof Node) td.appendChild(value); else td.textContent = String(value);
            tr.appendChild(td);
            table.appendChild(tr);
          }
          function frameRows(table, frames) {
            clear(table);
            var head = el("tr");
            ["#", "function", "source", "module"].forEach(function (h) { head.appendChild(el("th", "", h)); });
            table.appendChild(head);
            frames.forEach(function (f, k) {
              (f.inlined || []).forEach(function (i) {
                var tr = el("tr", "inlined");
                tr.appendChild(el("td", "num", k));
                tr.appendChild(el("td", "fn", str(i) + " [inlined]"));
                tr.appendChild(el("td", "")); tr.appendChild(el("td", ""));
                table.appendChild(tr);
              });
              var tr = el("tr");
              tr.appendChild(el("td", "num", k));
              tr.appendChild(el("td", "fn", str(f.fn) + (f.offset !== undefined ? " + " + f.offset : "") + (f.approximate ? " (approximate)" : "")));
              tr.appendChild(el("td", "src", f.file !== undefined ? str(f.file) + (f.line !== undefined ? ":" + f.line : "") : ""));
              tr.appendChild(el("td", "mod", str(f.mod)));
              table.appendChild(tr);
            });
          }
          // A stall's details travel as a JSON string of their own, parsed when it is shown:
          // 10 000 stalls then cost the page one parse of short records.
          function detail(i) {
            var s = stalls[i];
            if (!s.parsed) s.parsed = JSON.parse(s.detail);
            return s.parsed;
          }
          function select(i, fromUser) {
            selected = i;
            // Shown before drawing: a hidden section has no width to draw the flame graph in.
            $("stall").hidden = false;
            var s = stalls[i], t = targets[s.t], d = detail(i);
            var badge = $("stall-badge");
            badge.textContent = s.code + " " + s.reason;
            badge.style.background = color(s.reason);
            $("stall-title").textContent = t.label + " · stall #" + s.id + (s.kind === "snapshot" ? " (snapshot)" : "");
            $("stall-duration").textContent = dur(s.duration) + (s.ongoing ? " and ongoing" : "");
            $("stall-desc").textContent = d.description;
            var facts = $("stall-facts"); clear(facts);
            var culprit = el("span");
            culprit.appendChild(el("b", "culprit", s.culprit || "no stack captured"));
            if (s.culpritAt) culprit.appendChild(el("span", "src", "  " + s.culpritAt));
            kv(facts, "Culprit", culprit);
            var reason = data.reasons.filter(function (r) { return r.name === s.reason; })[0];
            kv(facts, "Reason", s.code + " " + s.reason + (reason ? " — " + reason.meaning : "") +
               (d.cause !== s.reason ? " (the thread was " + d.cause + ")" : ""));
            kv(facts, "When", stamp(s.start) + " → " + stamp(s.end) + (d.phase === "launch" ? " (during launch)" : ""));
            kv(facts, "Threshold", d.threshold !== undefined && d.threshold !== null ? dur(d.threshold) : "none (launch)");
            var ENDINGS = { returnedToIdle: "the loop turned again", targetDied: "the process died while stalled",
                            targetExited: "the process exited while stalled (its work ended with it)",
                            targetEnded: "the process ended while stalled (not the agent's child: exit or signal unknown)",
                            monitoringStopped: "the agent stopped watching first: the duration is a lower bound" };
            kv(facts, "Ended", s.ongoing ? "still going when the report was written" : ENDINGS[d.ending] || d.ending);
            kv(facts, "Termination", d.termination);
            var fp = data.fingerprints[s.fingerprint];
            kv(facts, "Fingerprint", fp.fingerprint + " · seen " + fp.seen + "×, this is occurrence " + d.occurrence);
            kv(facts, "Loop turns", d.loopTurns ? d.loopTurns + (d.loopTurnsNote ? " — " + d.loopTurnsNote : "") : null);
            kv(facts, "Sampling", d.samples.count + " samples every " + dur(d.samples.intervalSeconds) + " over " + dur(d.samples.sampledSeconds) +
               (d.samples.dropped ? ", " + d.samples.dropped + " dropped from the ring" : "") + (d.sampling ? " — " + d.sampling : ""));
            kv(facts, "Report", d.report + (d.folded ? " (+ .txt, .folded)" : " (+ .txt)"), "path");
            // Where the time went.
            var bar = $("states"); clear(bar);
            var legend = $("states-legend"); clear(legend);
            var STATE = { "running": "#d9483b", "run-queue wait": "#1f9a8a", "lock wait": "#8e44ad", "I/O wait": "#2f7fc8", "blocked": "#e39a1c" };
            d.states.forEach(function (st) {
              var frac = +st[2], seg = el("span", "seg");
              seg.style.background = STATE[st[0]] || "#9aa0a6";
              if (st[0].indexOf("stopped") !== 0) { seg.style.width = Math.max(0.5, frac * 100) + "%"; bar.appendChild(seg); }
              var item = el("span", "legend-item");
              var sw = el("span", "dot"); sw.style.background = STATE[st[0]] || "#9aa0a6";
              item.appendChild(sw);
              item.appendChild(document.createTextNode(st[0] + " " + dur(+st[1]) + " (" + Math.round(frac * 100) + " %)"));
              legend.appendChild(item);
            });
            // Flame graph.
            fl.root = decodeTree(d.tree); fl.zoom = null;
            drawFlame();
            // Heaviest stack.
            var heavy = $("heaviest");
            $("heaviest-head").textContent = d.heaviest.length
              ? "Heaviest stack (" + d.heaviestSamples + " of " + d.heaviestTotal + " samples), innermost first" : "Heaviest stack: none captured";
            frameRows(heavy, d.heaviest);
            // Lock owner.
            var lock = $("lock");
            lock.hidden = !d.lockOwner;
            if (d.lockOwner) {
              var o = d.lockOwner;
              $("lock-head").textContent = o.deadlock ? "Deadlock: the wait-for chain loops" : "Lock owner";
              var lf = $("lock-facts"); clear(lf);
              kv(lf, "Owner", "thread " + o.tid + (o.name ? " (" + o.name + ")" : "") + " — " + o.detail);
              kv(lf, "Wait chain", o.waitChain.join(" → ") + (o.deadlock ? " (back to the start: a cycle)" : ""));
              frameRows($("lock-frames"), o.frames);
            }
            // The agent's own cost.
            var ag = $("agent"); clear(ag);
            var a = d.agent;
            kv(ag, "Samples", a.samples + " (" + a.capturesWithStop + " with a stop, " + a.capturesWithoutStop + " without" +
               (a.failedCaptures ? ", " + a.failedCaptures + " failed" : "") + ")");
            kv(ag, "Pause per stop", a.capturesWithStop ? "p50 " + a.pauseP50Micros.toFixed(1) + " µs · p99 " + a.pauseP99Micros.toFixed(1) +
               " µs · total " + (a.pauseTotalMicros / 1000).toFixed(2) + " ms" : "none: the thread was never stopped");
            kv(ag, "Probe interval", dur(a.probeIntervalSeconds));
            // The process.
            var tf = $("target"); clear(tf);
            kv(tf, "Process", t.name + " [" + t.pid + "]" + (t.unit ? " in " + t.unit : "") + " on " + t.host);
            kv(tf, "Executable", t.path, "path");
            kv(tf, "Command line", t.argv ? t.argv.join(" ") : null, "path");
            kv(tf, "Build-id", t.buildId, "path");
            document.body.setAttribute("data-selected", String(i));
            Array.prototype.forEach.call(document.querySelectorAll("tr.sel"), function (r) { r.classList.remove("sel"); });
            var row = document.querySelector("tr[data-stall='" + i + "']");
            if (row) row.classList.add("sel");
            if (fromUser && history.replaceState) history.replaceState(null, "", "#stall=" + i);
            drawTimeline();
          }

          // ---- fingerprints ----
          function fillTable(tbody, rows, limit, more, makeRow) {
            clear(tbody);
            rows.slice(0, limit).forEach(function (r) { tbody.appendChild(makeRow(r)); });
            more.hidden = rows.length <= limit;
            more.textContent = "Show all " + rows.length;
            more.onclick = function () { fillTable(tbody, rows, rows.length, more, makeRow); };
          }
          function cell(tr, text, cls) { tr.appendChild(el("td", cls || "", text)); }
          function codeCell(tr, code, reason) {
            var td = el("td", "code");
            var dot = el("span", "dot"); dot.style.background = color(reason);
            td.appendChild(dot); td.appendChild(document.createTextNode(code + " " + reason));
            tr.appendChild(td);
          }
          var prints = data.fingerprints.slice().sort(function (a, b) { return b.total - a.total; });
          fillTable($("fingerprints-body"), prints, 50, $("fingerprints-more"), function (f) {
            var tr = el("tr", "click");
            tr.setAttribute("data-fingerprint", f.fingerprint);
            cell(tr, f.culprit || "no stack", "fn");
            codeCell(tr, f.code, f.reason);
            cell(tr, f.seen, "num"); cell(tr, f.reports, "num");
            cell(tr, dur(f.total), "num"); cell(tr, dur(f.worst), "num");
            cell(tr, f.targets, "num");
            cell(tr, f.fingerprint, "path");
            tr.addEventListener("click", function () { select(f.worstStall, true); $("stall").scrollIntoView({ behavior: "smooth" }); });
            return tr;
          });

          // ---- all stalls ----
          var order = stalls.map(function (s, i) { return i; });
          var sortKey = "start";
          function sortStalls() {
            order.sort(function (a, b) {
              return sortKey === "duration" ? stalls[b].duration - stalls[a].duration : stalls[a].start - stalls[b].start;
            });
            fillTable($("stalls-body"), order, 100, $("stalls-more"), function (i) {
              var s = stalls[i];
              var tr = el("tr", "click" + (i === selected ? " sel" : ""));
              tr.setAttribute("data-stall", String(i));
              tr.setAttribute("data-code", s.code);
              cell(tr, stamp(s.start), "num");
              cell(tr, targets[s.t].label);
              codeCell(tr, s.code, s.reason);
              cell(tr, dur(s.duration) + (s.ongoing ? " …" : ""), "num");
              cell(tr, s.culprit || "no stack", "fn culprit");
              cell(tr, s.culpritAt || "", "src");
              tr.addEventListener("click", function () { select(i, true); $("stall").scrollIntoView({ behavior: "smooth" }); });
              return tr;
            });
          }
          $("sort-time").addEventListener("click", function () { sortKey = "start"; sortStalls(); });
          $("sort-duration").addEventListener("click", function () { sortKey = "duration"; sortStalls(); });
          sortStalls();

          // ---- start ----
          document.body.setAttribute("data-stall-count", String(stalls.length));
          document.body.setAttribute("data-target-count", String(targets.length));
          var wanted = /^#stall=(\d+)$/.exec(location.hash);
          var initial = wanted && +wanted[1] < stalls.length ? +wanted[1] : -1;
          if (initial < 0) {
            // The latest stall: what an alert link is about.
            initial = 0;
            stalls.forEach(function (s, i) { if (s.start >= stalls[initial].start) initial = i; });
          }
          drawTimeline();
          if (stalls.length) select(initial, false);
          var resizeTimer = null;
          window.addEventListener("resize", function () {
            clearTimeout(resizeTimer);
            resizeTimer = setTimeout(function () { drawTimeline(); drawFlame(); }, 100);
          });
          document.body.setAttribute("data-render-ms", (performance.now() - started).toFixed(1));
          document.body.setAttribute("data-parse-ms", parseMs.toFixed(1));
          // From the navigation's start: reading the file, parsing the page and the data, drawing.
          document.body.setAttribute("data-ready-ms", performance.now().toFixed(1));
          document.body.setAttribute("data-ready", "1");

          // ---- self-test (page opened with #selftest): a click on the first stall's bar ----
          if (location.hash === "#selftest") {
            var result = { stallCount: stalls.length, bars: tl.bars.length, renderMs: performance.now() - started };
            var target = tl.bars.filter(function (b) { return b.i === 0; })[0];
            if (target) {
              var rect = tl.canvas.getBoundingClientRect();
              var evt = new MouseEvent("click", { bubbles: true, clientX: rect.left + target.x + target.w / 2, clientY: rect.top + target.y + target.h / 2 });
              // Nothing selected and no flame graph first, so only the click can draw one.
              selected = -1; fl.root = null; drawFlame();
              result.flameNodesBefore = +fl.canvas.getAttribute("data-nodes");
              tl.canvas.dispatchEvent(evt);
            }
            result.clickedStall = selected;
            result.flameNodes = +fl.canvas.getAttribute("data-nodes");
            result.treeSamples = fl.root ? fl.root.count : 0;
            result.parseMs = parseMs;
            result.healthRows = targets.filter(function (t) { return t.health; }).length;
            result.title = $("stall-title").textContent;
            result.badge = $("stall-badge").textContent;
            result.culprit = document.querySelector("#stall-facts .culprit").textContent;
            var zoomTo = fl.nodes.filter(function (f) { return f.n.depth === 1; })[0];
            if (zoomTo) {
              var frect = fl.canvas.getBoundingClientRect();
              fl.canvas.dispatchEvent(new MouseEvent("click", { bubbles: true, clientX: frect.left + zoomTo.x + 2, clientY: frect.top + zoomTo.y + 4 }));
              result.zoomedTo = fl.zoom ? fl.zoom.fn : null;
              result.flameNodesZoomed = fl.drawn;
            }
            result.errors = window.stallErrors.slice();
            var out = $("selftest");
            out.textContent = JSON.stringify(result);
            document.body.setAttribute("data-selftest", "done");
          }
        })();
        """#
}
