/// The SVG flame graph's inline script: zoom on click, search, reset. It reads names from the
/// frames' own (escaped) title text and writes only through textContent and attributes.
enum FlameGraphSVGScript {
    static let source = #"""
        (function () {
          "use strict";
          var svg = document.documentElement;
          var total = +svg.getAttribute("data-total");
          var side = +svg.getAttribute("data-side");
          var width = +svg.getAttribute("width") - 2 * side;
          var frames = Array.prototype.slice.call(document.querySelectorAll("g.f"));
          var reset = document.getElementById("reset");
          var search = document.getElementById("search");
          var clear = document.getElementById("clear");
          var matched = document.getElementById("matched");
          var details = document.getElementById("details");
          var info = frames.map(function (g) {
            return {
              g: g, x: +g.getAttribute("data-x"), w: +g.getAttribute("data-w"), d: +g.getAttribute("data-d"),
              rect: g.querySelector("rect"), text: g.querySelector("text"),
              name: g.querySelector("title").textContent.split("\n")[0],
              tip: g.querySelector("title").textContent.replace("\n", " — ")
            };
          });
          function fit(name, w) {
            var n = Math.floor((w - 6) / 7.2);
            if (n < 3) return "";
            return name.length <= n ? name : name.slice(0, n - 2) + "..";
          }
          function zoom(target) {
            var zx = target ? target.x : 0, zw = target ? target.w : total, zd = target ? target.d : 0;
            info.forEach(function (f) {
              var inside = f.x >= zx && f.x + f.w <= zx + zw && f.d >= zd;
              var above = f.d < zd && f.x <= zx && f.x + f.w >= zx + zw;
              if (!inside && !above) { f.g.style.display = "none"; return; }
              var x = inside ? side + (f.x - zx) / zw * width : side;
              var w = inside ? f.w / zw * width : width;
              if (w < 0.1) { f.g.style.display = "none"; return; }
              f.g.style.display = "";
              f.g.classList.toggle("dim", above);
              f.rect.setAttribute("x", x.toFixed(2));
              f.rect.setAttribute("width", w.toFixed(2));
              f.text.setAttribute("x", (x + 3).toFixed(2));
              f.text.textContent = fit(f.name, w);
            });
            reset.classList.toggle("off", !target);
          }
          info.forEach(function (f) {
            f.g.addEventListener("click", function () { zoom(f.d === 0 ? null : f); });
            f.g.addEventListener("mouseover", function () { details.textContent = f.tip; });
          });
          reset.addEventListener("click", function () { zoom(null); });
          function find(pattern) {
            var re;
            try { re = new RegExp(pattern); } catch (e) { re = null; }
            var hits = [];
            info.forEach(function (f) {
              var hit = !!pattern && (re ? re.test(f.name) : f.name.indexOf(pattern) >= 0);
              f.g.classList.toggle("hit", hit);
              if (hit) hits.push(f);
            });
            // Matched share without double-counting a frame under a matched caller.
            hits.sort(function (a, b) { return a.x - b.x || a.d - b.d; });
            var covered = 0, end = -1;
            hits.forEach(function (f) {
              if (f.x >= end) { covered += f.w; end = f.x + f.w; }
              else if (f.x + f.w > end) { covered += f.x + f.w - end; end = f.x + f.w; }
            });
            matched.textContent = pattern ? "Matched: " + (covered * 100 / total).toFixed(1) + " %" : "";
            clear.classList.toggle("off", !pattern);
            return hits.length;
          }
          search.addEventListener("click", function () {
            var pattern = window.prompt("Search frames (regular expression)", "");
            if (pattern !== null) find(pattern);
          });
          clear.addEventListener("click", function () { find(""); });
          window.addEventListener("keydown", function (e) {
            if ((e.ctrlKey || e.metaKey) && e.key === "f") {
              e.preventDefault();
              var pattern = window.prompt("Search frames (regular expression)", "");
              if (pattern !== null) find(pattern);
            } else if (e.key === "Escape") { zoom(null); find(""); }
          });
          // Opened as FILE.svg#selftest (the tests, in headless Chromium): zoom into the first
          // frame narrower than the whole and search for it; the result goes on the root element.
          if (location.hash === "#selftest") {
            var result = { frames: info.length, width: width };
            var narrow = info.filter(function (f) { return f.d >= 1 && f.w < total; })[0];
            if (narrow) {
              narrow.g.dispatchEvent(new MouseEvent("click", { bubbles: true }));
              result.zoomedTo = narrow.name;
              result.zoomedWidth = +narrow.rect.getAttribute("width");
              result.hidden = info.filter(function (f) { return f.g.style.display === "none"; }).length;
              result.resetShown = !reset.classList.contains("off");
              result.found = find(narrow.name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
              result.matched = matched.textContent;
            }
            svg.setAttribute("data-selftest", JSON.stringify(result));
          }
        })();
        """#
}
