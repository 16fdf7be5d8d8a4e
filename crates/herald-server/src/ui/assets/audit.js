// Audit: who did what (GET /v1/audit, newest first, cursor-paginated).
"use strict";
(function () {
  var el = H.el;
  var filters = el("form", { id: "audit-filter", class: "filters" },
    H.field("since", "since", "datetime-local"),
    el("button", { type: "submit" }, "Show"));
  var list = el("div", { id: "audit-list" });
  H.content().appendChild(filters);
  H.content().appendChild(list);
  var since = "";
  var pages = H.pager(list, {
    key: "entries",
    path: function (cur) { return "/v1/audit" + H.query(Object.assign({ limit: 50, since: since }, cur)); },
    render: function (items) {
      return H.table([
        ["at", function (e) { return H.fmtTime(e.at); }],
        ["tenant", function (e) { return e.tenant; }],
        ["key", function (e) { return e.key_name || (e.key_id === null || e.key_id === undefined ? "" : "#" + e.key_id); }],
        ["action", function (e) { return e.method + " " + e.route; }],
        ["resource", function (e) { return e.resource_id || ""; }],
        ["status", function (e) { return e.status; }],
        // A tally: refusals before any key was recognised, counted from `at` on.
        ["refused", function (e) { return e.reason ? e.count + " × " + e.reason : ""; }],
      ], items, { cls: "audit", empty: "No entries." });
    },
  });
  filters.addEventListener("submit", function (ev) {
    ev.preventDefault();
    since = H.isoOf(H.formValues(filters).since);
    pages.first().catch(H.fail);
  });
  pages.first().catch(H.fail);
})();
