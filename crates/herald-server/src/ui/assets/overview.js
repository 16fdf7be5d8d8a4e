// Overview: live deliveries/s and lateness from GET /v1/overview, every 1.5 s.
"use strict";
(function () {
  var el = H.el;
  var cards = el("div", { class: "cards", id: "overview-cards" });
  var chart = el("div", { class: "chart", id: "overview-chart" });
  var states = el("div", { id: "overview-states" });
  var channels = el("div", { id: "overview-channels" });
  var nodes = el("div", { id: "overview-nodes" });
  var forecast = el("div", { id: "overview-forecast" });
  H.content().appendChild(cards);
  var ahead = H.section("What falls due");
  var horizon = "hour";
  ahead.appendChild(el("div", { class: "tabs", id: "forecast-horizon" },
    H.button("Next hour", function () { horizon = "hour"; return loadForecast(); }, "horizon-hour"),
    H.button("Next day", function () { horizon = "day"; return loadForecast(); }, "horizon-day")));
  ahead.appendChild(forecast);
  H.section("Last 60 seconds").appendChild(chart);
  H.section("Timers by state").appendChild(states);
  H.section("Channels").appendChild(channels);
  H.section("Nodes").appendChild(nodes);

  function card(label, value, id) {
    return el("div", { class: "card", id: id }, el("div", { class: "label", text: label }), el("div", { class: "value", text: value }));
  }

  var SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs) {
    var n = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { n.setAttribute(k, String(attrs[k])); });
    return n;
  }
  // An axis of round steps (1, 2 or 5 times a power of ten) from 0 to at
  // least `max`: {top, step, digits} (digits: decimals a tick label needs).
  function niceScale(max) {
    if (!(max > 0)) max = 1;
    var raw = max / 4;
    var pow = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 5, 10].map(function (m) { return m * pow; }).find(function (s) { return s >= raw; });
    return { top: Math.ceil(max / step - 1e-9) * step, step: step, digits: Math.max(0, -Math.floor(Math.log10(step))) };
  }
  function seriesMax(series, keys) {
    var max = 0;
    series.forEach(function (p) { keys.forEach(function (k) { if (p[k] !== null && p[k] !== undefined) max = Math.max(max, Number(p[k]) || 0); }); });
    return max;
  }
  function text(attrs, label) {
    var t = svg("text", attrs);
    t.textContent = label;
    return t;
  }
  // Deliveries per second on the left axis, lateness (p50 and p99, one
  // scale: both are milliseconds) on the right, the last minute along the
  // bottom. A second without deliveries has no lateness: its line breaks.
  function drawChart(series) {
    H.clear(chart);
    var W = 720, Hh = 210, left = 54, right = 58, top = 22, bottom = 22;
    var plotW = W - left - right, plotH = Hh - top - bottom;
    var root = svg("svg", { viewBox: "0 0 " + W + " " + Hh, width: "100%", height: Hh, role: "img", "aria-label": "deliveries per second (left axis) and lateness in ms (right axis)", id: "live-chart" });
    root.appendChild(svg("rect", { x: left, y: top, width: plotW, height: plotH, class: "bg" }));
    var scales = {
      left: niceScale(seriesMax(series, ["deliveries"])),
      right: niceScale(seriesMax(series, ["p50_ms", "p99_ms"])),
    };
    function yOf(v, sc) { return top + plotH - (v * plotH) / sc.top; }
    var n = series.length;
    function xOf(i) { return left + (n > 1 ? (i * plotW) / (n - 1) : 0); }
    // Ticks: grid lines follow the left axis; each axis labels its own values.
    ["left", "right"].forEach(function (side) {
      var sc = scales[side];
      var g = svg("g", { class: "axis-" + side, "data-top": sc.top });
      var x = side === "left" ? left : left + plotW;
      g.appendChild(svg("line", { x1: x, y1: top, x2: x, y2: top + plotH, class: "axis" }));
      for (var v = 0; v <= sc.top + sc.step / 2; v += sc.step) {
        var y = yOf(v, sc);
        if (side === "left" && v > 0) root.appendChild(svg("line", { x1: left, y1: y, x2: left + plotW, y2: y, class: "grid" }));
        g.appendChild(svg("line", { x1: x, y1: y, x2: side === "left" ? x - 4 : x + 4, y2: y, class: "axis" }));
        g.appendChild(text({ x: side === "left" ? x - 6 : x + 6, y: y + 4, "text-anchor": side === "left" ? "end" : "start", class: "tick tick-" + side, "data-y": y.toFixed(1) }, v.toFixed(sc.digits)));
      }
      g.appendChild(text({ x: x, y: top - 8, "text-anchor": side === "left" ? "start" : "end", class: "axis-title" + (side === "left" ? " line-a" : "") },
        side === "left" ? "deliveries/s" : "lateness ms"));
      root.appendChild(g);
    });
    root.appendChild(svg("line", { x1: left, y1: top + plotH, x2: left + plotW, y2: top + plotH, class: "axis" }));
    // Five time ticks: the window's first second to its last.
    if (n) {
      for (var k = 0; k <= 4; k++) {
        var i = Math.round((k * (n - 1)) / 4);
        root.appendChild(text({ x: xOf(i).toFixed(1), y: Hh - 6, "text-anchor": k === 0 ? "start" : k === 4 ? "end" : "middle", class: "tick tick-time" },
          H.fmtTime(series[i].t).slice(11, 19)));
      }
    }
    var lines = [
      ["deliveries", "deliveries/s (left axis)", "line-a", scales.left],
      ["p50_ms", "lateness p50, ms (right axis)", "line-b", scales.right],
      ["p99_ms", "lateness p99, ms (right axis)", "line-c", scales.right],
    ];
    var legend = el("div", { class: "legend", id: "live-legend" });
    lines.forEach(function (l) {
      // Runs of seconds with a value; a null ends a run.
      var runs = [[]];
      series.forEach(function (p, i) {
        var v = p[l[0]];
        if (v === null || v === undefined) { if (runs[runs.length - 1].length) runs.push([]); return; }
        runs[runs.length - 1].push([xOf(i).toFixed(1), yOf(Number(v) || 0, l[3]).toFixed(1)]);
      });
      runs.forEach(function (pts) {
        // A second alone is a dot: a line needs two.
        if (pts.length === 1) root.appendChild(svg("circle", { cx: pts[0][0], cy: pts[0][1], r: 2.5, class: "dot " + l[2], "data-series": l[0] }));
        else if (pts.length) root.appendChild(svg("polyline", { points: pts.map(function (p) { return p.join(","); }).join(" "), class: l[2], "data-series": l[0] }));
      });
      var max = seriesMax(series, [l[0]]);
      legend.appendChild(el("span", { class: "key " + l[2], "data-series": l[0], "data-max": max }, l[1] + ", max " + H.fmtNum(max)));
    });
    chart.appendChild(root);
    chart.appendChild(legend);
  }

  function render(o) {
    var live = o.live || {};
    var lat = live.lateness_ms || {};
    H.clear(cards);
    cards.appendChild(card("deliveries/s", H.fmtNum(live.deliveries_per_s || 0), "card-rate"));
    cards.appendChild(card("lateness p50", H.fmtNum(lat.p50 || 0) + " ms", "card-p50"));
    cards.appendChild(card("lateness p99", H.fmtNum(lat.p99 || 0) + " ms", "card-p99"));
    cards.appendChild(card("in flight", H.fmtNum(o.inflight || 0), "card-inflight"));
    cards.appendChild(card("tenant", o.tenant || "all", "card-tenant"));
    drawChart(live.series || []);
    var t = o.timers || {};
    H.clear(states).appendChild(H.table([["state", function (r) { return r[0]; }], ["timers", function (r) { return r[1]; }]],
      Object.keys(t).map(function (k) { return [k, t[k]]; })));
    var sampled = o.sampled_at ? "sampled " + H.fmtTime(o.sampled_at) : "";
    states.appendChild(el("p", { class: "hint", text: sampled }));
    H.clear(channels).appendChild(H.table([
      ["channel", function (c) { return c.name; }],
      ["rate/s", function (c) { return H.fmtNum(c.rate_per_s); }],
      ["outcomes, last minute", function (c) { return H.outcomes(c.outcomes); }],
    ], o.channels || [], { cls: "channels", rowAttrs: function (c) { return { "data-channel": c.name }; } }));
    H.clear(nodes).appendChild(H.table([
      ["node", function (n) { return n.node_id; }],
      ["shards", function (n) { return n.shards; }],
      ["alive until", function (n) { return H.fmtTime(n.alive_until); }],
    ], o.nodes || []));
  }

  // A duration in words: "3 min 20 s", "45 s", "2 h 5 min".
  function dur(seconds) {
    var s = Math.round(seconds);
    if (s < 60) return s + " s";
    if (s < 3600) return Math.floor(s / 60) + " min" + (s % 60 ? " " + (s % 60) + " s" : "");
    return Math.floor(s / 3600) + " h" + (Math.floor((s % 3600) / 60) ? " " + Math.floor((s % 3600) / 60) + " min" : "");
  }

  // Stacked bars, one per bucket, one colour per channel, with a time axis
  // (the operator's zone) and the tallest bar's count on the left.
  var COLOURS = ["#2563eb", "#16a34a", "#d97706", "#9333ea", "#dc2626", "#0891b2", "#65a30d", "#db2777"];
  function dueChart(f) {
    var chans = f.channels || [];
    var n = chans.length ? chans[0].timers.length : 0;
    var totals = [];
    for (var i = 0; i < n; i++) {
      totals.push(chans.reduce(function (a, c) { return a + c.timers[i] + c.reminders[i]; }, 0));
    }
    var max = Math.max.apply(null, [0].concat(totals));
    var W = 720, Hh = 150, left = 56, bottom = 22, top = 6;
    var root = svg("svg", { viewBox: "0 0 " + W + " " + Hh, width: "100%", height: Hh, role: "img", "aria-label": "due per " + (f.bucket_s / 60) + " min by channel", id: "forecast-chart" });
    var plotW = W - left - 4, plotH = Hh - bottom - top;
    root.appendChild(svg("line", { x1: left, y1: top + plotH, x2: W - 4, y2: top + plotH, class: "axis" }));
    root.appendChild(svg("line", { x1: left, y1: top, x2: left, y2: top + plotH, class: "axis" }));
    var yl = svg("text", { x: left - 4, y: top + 10, "text-anchor": "end", class: "tick" });
    yl.textContent = String(max);
    root.appendChild(yl);
    var y0 = svg("text", { x: left - 4, y: top + plotH, "text-anchor": "end", class: "tick" });
    y0.textContent = "0";
    root.appendChild(y0);
    var bw = n ? plotW / n : 0;
    for (var b = 0; b < n; b++) {
      var y = top + plotH;
      chans.forEach(function (c, k) {
        var v = c.timers[b] + c.reminders[b];
        if (!v || !max) return;
        var h = (v * plotH) / max;
        y -= h;
        var r = svg("rect", { x: (left + b * bw).toFixed(1), y: y.toFixed(1), width: Math.max(1, bw - 1).toFixed(1), height: h.toFixed(1), fill: COLOURS[k % COLOURS.length] });
        var t = document.createElementNS(SVG, "title");
        t.textContent = c.channel + ": " + v + " due from " + H.fmtTime(Date.parse(f.from) + b * f.bucket_s * 1000);
        r.appendChild(t);
        root.appendChild(r);
      });
    }
    // Five time ticks along the bottom.
    for (var k = 0; k <= 4; k++) {
      var at = Date.parse(f.from) + (k * n * f.bucket_s * 1000) / 4;
      var label = svg("text", { x: (left + (k * plotW) / 4).toFixed(1), y: Hh - 6, "text-anchor": k === 0 ? "start" : k === 4 ? "end" : "middle", class: "tick" });
      label.textContent = H.fmtTime(at).slice(11, 16);
      root.appendChild(label);
    }
    var legend = el("div", { class: "legend" }, chans.map(function (c, k) {
      var sw = el("span", { class: "swatch" });
      sw.style.background = COLOURS[k % COLOURS.length];
      return el("span", { class: "key" }, sw, " " + c.channel);
    }));
    return el("div", { class: "chart" }, root, legend);
  }

  function renderForecast(f) {
    H.clear(forecast);
    if (f.state === "counting") {
      forecast.appendChild(el("p", { class: "hint", text: "Counting what falls due…" }));
      return;
    }
    var until = f.complete_until ? "; counted completely only up to " + H.fmtTime(f.complete_until) + " (too many to count further)" : "";
    forecast.appendChild(el("p", { class: "hint", id: "forecast-note",
      text: (f.horizon === "hour" ? "Next hour, per minute" : "Next day, per 15 minutes") + ", in " + H.zone() +
        ". Counted " + H.rel(f.counted_at) + " in " + f.count_took_ms + " ms" + until + "." }));
    var behind = (f.channels || []).filter(function (c) { return c.behind; });
    behind.forEach(function (c) {
      forecast.appendChild(el("p", { class: "warning forecast-warning", "data-channel": c.channel,
        text: "⚠ " + c.channel + " cannot keep up: at " + H.fmtNum(c.rate_per_sec) + "/s, what falls due from " +
          H.fmtTime(c.behind.from).slice(11, 16) + " waits; the last of " + H.fmtTime(c.behind.worst_at).slice(11, 16) +
          "'s goes out about " + dur(c.behind.worst_late_s) + " after that minute (" + c.behind.waiting + " waiting)." }));
    });
    if (!(f.channels || []).length) {
      forecast.appendChild(el("p", { class: "empty", id: "forecast-empty", text: "Nothing falls due in the " + f.horizon + " ahead." }));
      return;
    }
    forecast.appendChild(dueChart(f));
    forecast.appendChild(H.table([
      ["channel", function (c) { return c.configured ? c.channel : c.channel + " (not configured)"; }],
      ["timers", function (c) { return c.timers.reduce(function (a, b) { return a + b; }, 0); }],
      ["reminders", function (c) { return c.reminders.reduce(function (a, b) { return a + b; }, 0); }],
      ["rate/s", function (c) { return c.rate_per_sec === null ? "unlimited" : H.fmtNum(c.rate_per_sec); }],
      ["sends take", function (c) { return c.rate_per_sec ? dur(c.total / c.rate_per_sec) : "—"; }],
      ["in time?", function (c) {
        if (c.behind) return el("span", { class: "state failed", text: "behind by " + dur(c.behind.worst_late_s) });
        return el("span", { class: "state done", text: c.rate_per_sec ? "keeps up" : "no rate set" });
      }],
    ], f.channels, { cls: "forecast", rowAttrs: function (c) { return { "data-channel": c.channel }; } }));
  }

  function loadForecast() {
    return H.get("/v1/forecast" + H.query({ horizon: horizon })).then(function (f) {
      renderForecast(f);
      // A first count may still be running: ask again soon.
      if (f.state === "counting") setTimeout(function () { loadForecast().catch(H.fail); }, 1000);
    });
  }

  H.poll(function () { return H.get("/v1/overview").then(render); }, 1500);
  H.poll(loadForecast, 15000);
})();
