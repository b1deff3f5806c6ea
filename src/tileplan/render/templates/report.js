// tileplan report: draws the charts from the embedded data and lists the live values of a step.
// Every text from the report goes into the page through textContent, never as markup.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("tileplan-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                 "#9c755f", "#a0cbe8", "#ffbe7d", "#8cd17d", "#b6992d", "#499894", "#86bcb6", "#d37295",
                 "#fabfd2", "#d4a6c8", "#f1ce63", "#2f4b7c"];
  function colourAt(k) {  // the palette, then golden-angle hues
    return k < PALETTE.length ? PALETTE[k] : "hsl(" + Math.round((k * 137.508) % 360) + ",55%,55%)";
  }
  var OTHER = "other groups", SCRATCH = "scratch";
  var nSteps = data.steps;

  // ---- the detail of every step and value, inflated when a step is first shown ----------
  // typed arrays in one zlib block (see render/html.py: Arrays), the texts in another
  var NULL_I4 = -2147483648;
  function inflate(b64) {
    var bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (var k = 0; k < bin.length; k++) bytes[k] = bin.charCodeAt(k);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).arrayBuffer();
  }
  function arrays(buffer, specs) {
    var out = {};
    specs.forEach(function (s) {  // [name, kind, delta, offset, count]
      var a = s[1] === "i4" ? new Int32Array(buffer, s[3], s[4]) : new Float64Array(buffer, s[3], s[4]);
      if (s[2]) {
        var sum = new Float64Array(s[4]), acc = 0;
        for (var k = 0; k < s[4]; k++) { acc += a[k]; sum[k] = acc; }
        a = sum;
      }
      out[s[0]] = a;
    });
    return out;
  }
  function num(a, i) {  // null where unknown
    var x = a[i];
    return x === NULL_I4 || x !== x ? null : x;
  }
  var detail = null;
  function loadDetail() {
    if (detail) return detail;
    var d = data.detail;
    detail = Promise.all([inflate(d.binary), inflate(d.texts)]).then(function (parts) {
      var a = arrays(parts[0], d.arrays);
      a.texts = JSON.parse(new TextDecoder("utf-8").decode(parts[1]));
      a.opNames = {};
      a.texts.operation_index.forEach(function (index, k) { a.opNames[index] = a.texts.operation_names[k]; });
      // each value's live range: the first and last step of its runs
      a.first = new Int32Array(d.values).fill(-1);
      a.last = new Int32Array(d.values).fill(-1);
      for (var k = 0; k < d.runs; k++) {
        var v = a.run_value[k], f = a.run_first[k], l = f + a.run_length[k] - 1;
        if (a.first[v] < 0 || f < a.first[v]) a.first[v] = f;
        if (l > a.last[v]) a.last[v] = l;
      }
      return a;
    });
    return detail;
  }
  function liveAt(a, i) {  // the rows of the values live in step i: a scan of the runs
    var out = [], n = data.detail.runs;
    for (var k = 0; k < n; k++) {
      var f = a.run_first[k];
      if (f <= i && i < f + a.run_length[k]) out.push(a.run_value[k]);
    }
    return out;
  }

  function svgEl(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(e);
    return e;
  }
  function svgText(parent, x, y, s, attrs) {
    var t = svgEl("text", Object.assign({x: x, y: y}, attrs || {}), parent);
    t.textContent = s;
    return t;
  }
  function tip(e, s) { svgEl("title", {}, e).textContent = s; }
  function human(n) {
    if (n === null || n === undefined) return "unknown";
    var sign = n < 0 ? "-" : "", a = Math.abs(n);
    if (a < 1024) return sign + a + " B";
    var units = ["KiB", "MiB", "GiB"], i = -1;
    do { a /= 1024; i++; } while (a >= 1024 && i < units.length - 1);
    return sign + a.toFixed(1) + " " + units[i];
  }
  function cell(tr, s, cls) {
    var td = document.createElement("td");
    td.textContent = s;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }
  function niceTicks(max, count) {
    // round steps in the unit the labels use (B, KiB or MiB), so labels read 100 KiB, 200 KiB, ...
    var unit = max >= 4 * 1048576 ? 1048576 : (max >= 4096 ? 1024 : 1);
    var raw = Math.max(max / unit / count, 1e-9), mag = Math.pow(10, Math.floor(Math.log10(raw))), step = mag;
    [1, 2, 2.5, 5, 10].some(function (m) { step = m * mag; return step >= raw; });
    var out = [];
    for (var k = 0; k * step * unit <= max; k++) out.push(k * step * unit);
    return out;
  }

  // colours: one per band label, the same in both regions
  var colours = {};
  var next = 0;
  data.bands.forEach(function (b) {
    if (colours[b.label] !== undefined) return;
    if (b.group === OTHER) colours[b.label] = "#bab0ac";
    else if (b.group === SCRATCH) colours[b.label] = "#79706e";
    else colours[b.label] = colourAt(next++);
  });
  var EXCHANGE_COLOUR = "#3b3b3b";

  // ---- the liveness chart -------------------------------------------------------------
  // at most a few thousand columns: [first, last, shown] steps each, drawn as the shown (tallest) step
  var chart = document.getElementById("chart");
  var M = {left: 76, right: 16, top: 26, gap: 46, bottom: 34};
  var H1 = 300, H2 = 110;
  var cols = data.columns, nCols = cols.length;
  function colOf(step) {  // the column holding a step (binary search of the first steps)
    var lo = 0, hi = nCols - 1;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (cols[mid][0] <= step) lo = mid; else hi = mid - 1;
    }
    return lo;
  }
  function stackAt(bands, c) { return bands.reduce(function (s, b) { return s + b.bytes[c]; }, 0); }
  var barW = Math.max(3, Math.min(120, Math.floor(1100 / Math.max(1, nCols))));
  var W = M.left + barW * Math.max(1, nCols) + M.right;
  var totalH = M.top + H1 + M.gap + H2 + M.bottom;
  var svg = svgEl("svg", {viewBox: "0 0 " + W + " " + totalH, width: W, height: totalH, id: "liveness-svg"}, chart);
  var exchange = data.exchange_bytes || 0;
  var std = data.bands.filter(function (b) { return b.region === "standard"; });
  var inter = data.bands.filter(function (b) { return b.region === "interleaved"; });

  var top1 = Math.max(data.budget_bytes, 1);
  var top2 = Math.max(data.interleaved_budget_bytes, 1);
  cols.forEach(function (col, c) {
    top1 = Math.max(top1, stackAt(std, c) + stackAt(inter, c) + exchange, data.column_total[c] || 0);
    top2 = Math.max(top2, stackAt(inter, c));
  });
  top1 *= 1.08; top2 *= 1.08;
  var panel1 = {y0: M.top, h: H1, top: top1, title: "All memory per tile: standard + interleaved" +
                (exchange ? " + exchange rows" : "")};
  var panel2 = {y0: M.top + H1 + M.gap, h: H2, top: top2, title: "Interleaved region"};
  function XC(c) { return M.left + c * barW; }
  function X(step) { return XC(colOf(step)); }
  function Y(p, bytes) { return p.y0 + p.h - bytes / p.top * p.h; }

  function axes(p) {
    var g = svgEl("g", {"class": "axis"}, svg);
    svgText(g, M.left, p.y0 - 8, p.title, {"font-weight": "600"});
    niceTicks(p.top, p === panel1 ? 5 : 2).forEach(function (v) {
      var y = Y(p, v);
      svgEl("line", {x1: M.left - 4, x2: M.left, y1: y, y2: y}, g);
      svgEl("line", {x1: M.left, x2: W - M.right, y1: y, y2: y, stroke: "#eaeef2"}, g);
      svgText(g, M.left - 6, y + 4, human(v), {"text-anchor": "end"});
    });
    svgEl("line", {x1: M.left, x2: M.left, y1: p.y0, y2: p.y0 + p.h}, g);
    svgEl("line", {x1: M.left, x2: W - M.right, y1: p.y0 + p.h, y2: p.y0 + p.h}, g);
  }
  function repeats(p) {
    data.repeats.forEach(function (r) {
      var rect = svgEl("rect", {"class": "repeat", x: X(r.first_step), y: p.y0,
                                width: (colOf(r.last_step) - colOf(r.first_step) + 1) * barW, height: p.h}, svg);
      tip(rect, "steps " + r.first_step + "-" + r.last_step + ": a repeat block run " + r.count + " times (" +
          r.operations + " operations)");
      if (p === panel1) svgText(svg, X(r.first_step) + 2, p.y0 + p.h + 14, "repeat block x" + r.count + " (steps " +
                                r.first_step + "-" + r.last_step + ")", {fill: "#57606a"});
    });
  }
  var unknownAt = {};  // column -> [top step, its count, bottom step, its count]
  data.unknown.forEach(function (u) { unknownAt[u[0]] = u.slice(1); });
  function bars(p, bandList, withExchange) {
    var g = svgEl("g", {"class": "bars"}, svg);
    cols.forEach(function (col, c) {
      var y = 0, x = XC(c);
      bandList.forEach(function (b) {
        var v = b.bytes[c];
        if (!v) { return; }
        svgEl("rect", {x: x, width: Math.max(1, barW - 1), y: Y(p, y + v), height: Y(p, y) - Y(p, y + v),
                       fill: colours[b.label], "fill-opacity": b.region === "interleaved" && p === panel1 ? 0.55 : 1}, g);
        y += v;
      });
      if (withExchange && exchange) {
        svgEl("rect", {x: x, width: Math.max(1, barW - 1), y: Y(p, y + exchange),
                       height: Y(p, y) - Y(p, y + exchange), fill: EXCHANGE_COLOUR}, g);
        y += exchange;
      }
      var u = unknownAt[c], i = u ? (p === panel1 ? u[0] : u[2]) : -1;
      if (i >= 0) {
        var rect = svgEl("rect", {"class": "unknown", x: x, width: Math.max(1, barW - 1), y: p.y0 + 2,
                                  height: Math.max(4, Y(p, y) - p.y0 - 2)}, g);
        tip(rect, "step " + i + ": " + (p === panel1 ? u[1] : u[3]) +
            " live values have no size; usage unknown (the bar is the known part)");
        svgText(g, x + barW / 2, p.y0 + 14, "?", {"text-anchor": "middle", fill: "#7d4e00"});
      }
    });
  }
  function hline(p, bytes, cls, label) {
    if (bytes > p.top) return;
    var y = Y(p, bytes);
    svgEl("line", {"class": cls, x1: M.left, x2: W - M.right, y1: y, y2: y}, svg);
    svgText(svg, W - M.right - 4, y - 4, label, {"text-anchor": "end", fill: cls === "budget" ? "#cf222e" : "#7d4e00"});
  }

  axes(panel1); repeats(panel1); bars(panel1, std.concat(inter), true);
  axes(panel2); repeats(panel2); bars(panel2, inter, false);
  hline(panel1, data.budget_bytes, "budget", data.budget_label + " " + human(data.budget_bytes));
  hline(panel1, data.standard_budget_bytes, "region-line",
        "non-interleaved budget " + human(data.standard_budget_bytes) + ": standard data overflows above");
  hline(panel2, data.interleaved_budget_bytes, "budget", "interleaved budget " + human(data.interleaved_budget_bytes));

  if (data.judged_on === "exact") {  // the highest worst tile of each column
    var d = "";
    cols.forEach(function (col, c) {
      var t = data.column_total[c];
      if (t === null) return;
      var y = Y(panel1, t);
      d += (d ? "L" : "M") + XC(c) + " " + y + "L" + (XC(c) + barW) + " " + y;
    });
    if (d) tip(svgEl("path", {"class": "exact", d: d}, svg), "the exact worst tile of each step, with the exchange rows");
  }
  var peak = data.regions[0];
  if (data.peak_step !== null && peak.peak !== null) {
    var px = X(data.peak_step) + barW / 2, py = Y(panel1, peak.peak);
    var mark = svgEl("path", {d: "M" + px + " " + (py - 2) + "l-6 -10h12z", fill: "#cf222e", id: "peak-marker"}, svg);
    tip(mark, "peak");
    var label = "peak " + human(peak.peak) + " at step " + data.peak_step + (peak.tile !== null ? ", tile " + peak.tile : "");
    var right = data.peak_step > nSteps * 0.6;
    svgText(svg, px + (right ? -10 : 10), Math.max(panel1.y0 + 10, py - 14), label,
            {"text-anchor": right ? "end" : "start", "font-weight": "600"});
  }
  // x axis
  var every = Math.max(1, Math.ceil(nCols / 20));
  for (var k = 0; k < nCols; k += every) {
    svgText(svg, XC(k) + barW / 2, panel2.y0 + panel2.h + 14, String(cols[k][0]),
            {"text-anchor": "middle", fill: "#57606a"});
  }
  svgText(svg, M.left, totalH - 4, "step", {fill: "#57606a"});
  var selected = svgEl("rect", {"class": "selected", x: 0, y: M.top, width: barW, height: panel2.y0 + H2 - M.top,
                                visibility: "hidden"}, svg);
  // click targets, one per column (its shown step), over both panels
  var hits = svgEl("g", {id: "step-targets"}, svg);
  cols.forEach(function (col, c) {
    var i = col[2], s = data.column_steps[c];
    var r = svgEl("rect", {"class": "hit", x: XC(c), y: M.top, width: barW, height: panel2.y0 + H2 - M.top,
                           "data-step": i, id: "hit-step-" + i}, hits);
    tip(r, (col[0] < col[1] ? "steps " + col[0] + "-" + col[1] + ", tallest " : "") + "step " + i + ": " +
        s.operation + " of operation " + s.source + (s.name !== null ? " (" + s.name + ")" : "") +
        (s.execution_count > 1 ? ", runs " + s.execution_count + " times" : "") + "; " + human(s.total) +
        (s.tile !== null ? " on tile " + s.tile : ""));
    r.addEventListener("click", function () { selectStep(i, true); });
  });

  // legend
  var legend = document.getElementById("legend");
  function swatch(colour, label, opacity) {
    var span = document.createElement("span");
    var i = document.createElement("i");
    i.style.background = colour;
    if (opacity) i.style.opacity = opacity;
    span.appendChild(i);
    span.appendChild(document.createTextNode(label));
    legend.appendChild(span);
  }
  var shown = {};
  data.bands.forEach(function (b) {
    if (shown[b.label]) return;
    shown[b.label] = true;
    swatch(colours[b.label], b.label);
  });
  if (exchange) swatch(EXCHANGE_COLOUR, "exchange rows");
  if (data.repeats.length) swatch("#eaeef2", "repeat block");

  // ---- live values of a step ------------------------------------------------------------
  var wanted = null;  // the step last asked for: a slower earlier one never overwrites it
  function selectStep(i, scroll) {
    if (!(i >= 0 && i < nSteps)) return Promise.resolve();
    wanted = i;
    selected.setAttribute("x", X(i));
    selected.setAttribute("visibility", "visible");
    document.getElementById("step-title").textContent = "Live values at step " + i;
    if (scroll && history.replaceState) history.replaceState(null, "", "#step-" + i);
    return loadDetail().then(function (a) {
      if (wanted !== i) return;
      showStep(a, i);
    }, function (e) {
      document.getElementById("step-info").textContent = "This browser cannot read the page's step data (" + e + ").";
    });
  }
  function showStep(a, i) {
    var t = a.texts, source = a.source[i], count = a.execution_count[i], total = num(a.total, i);
    var tile = num(a.tile, i), unknown = a.unknown[i];
    var live = liveAt(a, i);
    live.sort(function (x, y) {
      var bx = num(a.value_bytes, x), by = num(a.value_bytes, y);
      if ((bx === null) !== (by === null)) return bx === null ? 1 : -1;
      return (by || 0) - (bx || 0) || a.value_id[x] - a.value_id[y];
    });
    var info = t.briefs[a.operation[i]] + " of operation " + source +
        (a.opNames[source] !== undefined ? " (" + a.opNames[source] + ")" : "") +
        (count > 1 ? ", runs " + count + " times" : "") + ". " + live.length +
        " values live; standard " + human(num(a.standard, i)) + ", interleaved " + human(num(a.interleaved, i)) +
        " (estimate)" + (tile !== null ? "; worst tile " + tile + ": " + human(total) + " with exchange rows" : "") +
        (unknown ? "; " + unknown + " values of unknown size" : "") + ".";
    document.getElementById("step-info").textContent = info;
    var body = document.querySelector("#live-values tbody");
    while (body.firstChild) body.removeChild(body.firstChild);
    live.forEach(function (v) {
      var tr = document.createElement("tr"), bytes = num(a.value_bytes, v), layout = a.value_layout[v];
      tr.setAttribute("data-value", a.value_id[v]);
      cell(tr, human(bytes)).title = bytes === null ? "unknown" : bytes + " B";
      cell(tr, t.names[v], "name");
      cell(tr, t.shapes[a.value_shape[v]]);
      cell(tr, t.precisions[a.value_precision[v]]);
      cell(tr, t.layouts[layout]).title = t.layout_texts[layout];
      cell(tr, t.layout_regions[layout]);
      cell(tr, t.roles[a.value_role[v]] || "-");
      cell(tr, a.first[v] < 0 ? "-" : a.first[v] + "-" + a.last[v]);
      body.appendChild(tr);
    });
    document.body.setAttribute("data-selected-step", i);
  }
  Array.prototype.forEach.call(document.querySelectorAll("a.step-link"), function (a) {
    a.addEventListener("click", function (e) {
      e.preventDefault();
      selectStep(Number(a.getAttribute("data-step")), true);
      document.getElementById("step").scrollIntoView();
    });
  });

  // ---- per tile --------------------------------------------------------------------------
  var tiles = data.tiles;
  if (tiles) {
    var hist = tiles.histogram, counts = hist.counts, hw = 480, hh = 160, hm = 30;
    var hsvg = svgEl("svg", {viewBox: "0 0 " + (hw + 2 * hm) + " " + (hh + 2 * hm), width: hw + 2 * hm,
                             height: hh + 2 * hm}, document.getElementById("histogram"));
    var cmax = Math.max.apply(null, counts.concat([1])), bw = hw / Math.max(1, counts.length);
    counts.forEach(function (c, k) {
      var h = c / cmax * hh;
      var r = svgEl("rect", {x: hm + k * bw, y: hm + hh - h, width: Math.max(1, bw - 1), height: h, fill: "#4e79a7"}, hsvg);
      var lo = hist.first_bytes + k * hist.bin_bytes;
      tip(r, c + " tiles with a peak of " + lo + " to " + (lo + hist.bin_bytes - 1) + " B");
    });
    svgEl("line", {x1: hm, x2: hm + hw, y1: hm + hh, y2: hm + hh, stroke: "#8c959f"}, hsvg);
    svgText(hsvg, hm, hm + hh + 16, human(hist.first_bytes));
    svgText(hsvg, hm + hw, hm + hh + 16, human(hist.first_bytes + counts.length * hist.bin_bytes),
            {"text-anchor": "end"});
    svgText(hsvg, hm, hm - 8, cmax + " tiles", {fill: "#57606a"});

    var nTiles = tiles.peak.length, tcols = tiles.columns, rows = Math.ceil(nTiles / tcols), c = 12;
    var msvg = svgEl("svg", {viewBox: "0 0 " + (tcols * c + 20) + " " + (rows * c + 40), width: tcols * c + 20,
                             height: rows * c + 40, id: "heatmap-svg"}, document.getElementById("heatmap"));
    var lo = Math.min.apply(null, tiles.peak), hi = Math.max.apply(null, tiles.peak);
    var STOPS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
    function ramp(f) {
      var x = Math.max(0, Math.min(1, f)) * (STOPS.length - 1), k = Math.min(STOPS.length - 2, Math.floor(x)), t = x - k;
      var a = STOPS[k], b = STOPS[k + 1];
      return "rgb(" + [0, 1, 2].map(function (j) { return Math.round(a[j] + (b[j] - a[j]) * t); }).join(",") + ")";
    }
    tiles.peak.forEach(function (b, t) {
      var r = svgEl("rect", {"class": "tile", x: 10 + (t % tcols) * c, y: 10 + Math.floor(t / tcols) * c, width: c - 1,
                             height: c - 1, fill: ramp(hi > lo ? (b - lo) / (hi - lo) : 0.5), "data-tile": t}, msvg);
      tip(r, "tile " + t + ": peak " + b + " B at step " + tiles.peak_step[t] + " (" + tiles.peak_resident[t] +
          " B always live)");
      r.addEventListener("click", function () {
        selectStep(tiles.peak_step[t], true);
        document.getElementById("step").scrollIntoView();
      });
    });
    svgText(msvg, 10, rows * c + 30, "low " + human(lo));
    svgText(msvg, tcols * c + 10, rows * c + 30, "high " + human(hi), {"text-anchor": "end"});
  }

  var m = /^#step-(\d+)$/.exec(location.hash);
  var first = m ? Number(m[1]) : data.peak_step;
  (first !== null ? selectStep(first, false) : Promise.resolve()).then(function () {
    document.body.setAttribute("data-ready", "1");
  });
})();
