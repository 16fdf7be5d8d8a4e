// Cluster: nodes, shards per node, leases with epochs (GET /v1/cluster).
"use strict";
(function () {
  var el = H.el;
  var summary = H.section("Nodes");
  var leases = H.section("Shard leases");
  function render(c) {
    H.clear(summary).appendChild(el("h2", { text: "Nodes" }));
    summary.appendChild(el("p", { id: "cluster-summary",
      text: c.shards + " shards; " + c.unowned + " unowned; answered by " + c.node_id + " (incarnation " + c.incarnation + ")" }));
    var owners = c.owners || {};
    summary.appendChild(H.table([
      ["node", function (r) { return r[0]; }],
      ["shards", function (r) { return r[1]; }],
    ], Object.keys(owners).map(function (k) { return [k, owners[k]]; }), { cls: "nodes" }));
    H.clear(leases).appendChild(el("h2", { text: "Shard leases" }));
    leases.appendChild(H.table([
      ["shard", function (l) { return l.shard; }],
      ["owner", function (l) { return l.owner || "—"; }],
      ["epoch", function (l) { return l.epoch; }],
      ["incarnation", function (l) { return l.incarnation; }],
      ["lease until", function (l) { return H.fmtTime(l.lease_until); }],
    ], c.leases || [], { cls: "leases" }));
  }
  H.poll(function () { return H.get("/v1/cluster").then(render); }, 5000);
})();
