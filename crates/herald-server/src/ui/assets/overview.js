// Overview: live deliveries/s and lateness from GET /v1/overview, every 1.5 s.
"use strict";
(function () {
  var el = H.el;
  var cards = el("div", { class: "cards", id: "overview-cards" });
  var chart = el("div", { class: "chart", id: "overview-chart" });
  var states = el("div", { id: "overview-states" });
  var channels = el("div", { id: "overview-channels" });
  var nodes = el("div", { id: "overview-nodes" });
  H.content().appendChild(cards);
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
  // One polyline per series; each scaled to its own maximum (shown in the legend).
  function drawChart(series) {
    H.clear(chart);
    var W = 720, Hh = 180, pad = 4;
    var root = svg("svg", { viewBox: "0 0 " + W + " " + Hh, width: "100%", height: Hh, preserveAspectRatio: "none", role: "img", "aria-label": "deliveries and lateness" });
    root.appendChild(svg("rect", { x: 0, y: 0, width: W, height: Hh, class: "bg" }));
    var lines = [
      ["deliveries", "deliveries/s", "line-a"],
      ["p50_ms", "lateness p50 ms", "line-b"],
      ["p99_ms", "lateness p99 ms", "line-c"],
    ];
    var legend = el("div", { class: "legend" });
    var n = series.length;
    lines.forEach(function (l) {
      var max = 0;
      series.forEach(function (s) { max = Math.max(max, Number(s[l[0]]) || 0); });
      var pts = series.map(function (s, i) {
        var x = n > 1 ? (i * (W - 2 * pad)) / (n - 1) + pad : pad;
        var y = Hh - pad - (max > 0 ? ((Number(s[l[0]]) || 0) * (Hh - 2 * pad)) / max : 0);
        return x.toFixed(1) + "," + y.toFixed(1);
      });
      if (pts.length) root.appendChild(svg("polyline", { points: pts.join(" "), class: l[2] }));
      legend.appendChild(el("span", { class: "key " + l[2] }, l[1] + " (max " + H.fmtNum(max) + ")"));
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
      ["outcomes", function (c) {
        var oc = c.outcomes || {};
        return Object.keys(oc).map(function (k) { return k + " " + oc[k]; }).join(", ");
      }],
    ], o.channels || []));
    H.clear(nodes).appendChild(H.table([
      ["node", function (n) { return n.node_id; }],
      ["shards", function (n) { return n.shards; }],
      ["alive until", function (n) { return H.fmtTime(n.alive_until); }],
    ], o.nodes || []));
  }

  H.poll(function () { return H.get("/v1/overview").then(render); }, 1500);
})();
