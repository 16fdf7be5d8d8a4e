// Cluster: one row per node process (shards, epochs, lease times,
// incarnation), and every shard's lease behind a toggle (GET /v1/cluster).
// Incarnations are 64-bit: the API sends them as strings, shown as sent.
"use strict";
(function () {
  var el = H.el;
  var summary = H.section("Nodes");
  var leases = H.section("Shard leases");
  var open = false;
  function range(lo, hi) { return lo === hi ? String(lo) : lo + "–" + hi; }
  function render(c) {
    H.clear(summary).appendChild(el("h2", { text: "Nodes" }));
    summary.appendChild(el("p", { id: "cluster-summary",
      text: c.shards + " shards; " + c.unowned + " unowned; answered by " + c.node_id + " (incarnation " + c.incarnation + ")" }));
    summary.appendChild(H.table([
      ["node", function (n) { return n.node_id; }],
      ["shards", function (n) { return n.shards; }],
      ["epochs", function (n) { return range(n.epoch_min, n.epoch_max); }],
      ["lease until", function (n) {
        var lo = H.fmtTime(n.lease_until_min), hi = H.fmtTime(n.lease_until_max);
        return lo === hi ? lo : lo + " – " + hi;
      }],
      ["incarnation", function (n) { return n.incarnation; }],
    ], c.nodes || [], {
      cls: "nodes",
      empty: "No node holds a lease.",
      rowAttrs: function (n) { return { "data-node": n.node_id }; },
    }));
    H.clear(leases).appendChild(el("h2", { text: "Shard leases" }));
    var all = c.leases || [];
    var details = el("details", { id: "lease-table", open: open ? true : null },
      el("summary", { text: "All " + all.length + " leases" }),
      H.table([
        ["shard", function (l) { return l.shard; }],
        ["owner", function (l) { return l.owner || "—"; }],
        ["epoch", function (l) { return l.epoch; }],
        ["incarnation", function (l) { return l.incarnation; }],
        ["lease until", function (l) { return H.fmtTime(l.lease_until); }],
      ], all, { cls: "leases" }));
    // Keep the toggle as the operator left it across refreshes.
    details.addEventListener("toggle", function () { open = details.open; });
    leases.appendChild(details);
  }
  H.poll(function () { return H.get("/v1/cluster").then(render); }, 5000);
})();
