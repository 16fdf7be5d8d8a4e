// Audit: who did what (GET /v1/audit, newest first, cursor-paginated),
// narrowed by tenant (the admin), key, route and status.
"use strict";
(function () {
  var el = H.el;
  var admin = (function () {
    var m = document.querySelector('meta[name="herald-admin"]');
    return !!m && m.getAttribute("content") === "true";
  })();
  var filters = el("form", { id: "audit-filter", class: "filters" },
    admin ? H.field("tenant", "tenant") : null,
    H.field("key (id or name)", "key"),
    H.field("route (a final * for a prefix)", "route"),
    H.field("status (404 or 4xx)", "status"),
    H.field("since", "since", "datetime-local"),
    H.field("order", "order", "select", [["desc", "newest first"], ["asc", "oldest first"]]),
    el("button", { type: "submit" }, "Show"));
  var list = el("div", { id: "audit-list" });
  H.content().appendChild(filters);
  H.content().appendChild(list);
  var asked = {};
  var pages = H.pager(list, {
    key: "entries",
    path: function (cur) {
      return "/v1/audit" + H.query(Object.assign({ limit: 50 }, asked, cur));
    },
    render: function (items) {
      return H.table([
        ["at", function (e) { return H.fmtTime(e.at); }],
        ["tenant", function (e) { return e.tenant; }],
        ["key", function (e) {
          var id = e.key_id === null || e.key_id === undefined ? "" : "#" + e.key_id;
          return e.key_name ? e.key_name + (id ? " " + id : "") : id;
        }],
        // The method and the route as recorded: an action keeps its `:name`.
        ["action", function (e) { return e.method + " " + e.route; }],
        ["resource", function (e) { return e.resource_id || ""; }],
        ["status", function (e) { return e.status; }],
        // A tally: refusals before any key was recognised, counted from `at` on.
        ["refused", function (e) { return e.reason ? e.count + " × " + e.reason : ""; }],
      ], items, {
        cls: "audit",
        empty: "No entries.",
        rowAttrs: function (e) { return { "data-id": e.id, "data-status": e.status }; },
      });
    },
  });
  filters.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var v = H.formValues(filters);
    asked = {
      tenant: v.tenant, key: v.key, route: v.route, status: v.status,
      since: H.isoOf(v.since), order: v.order === "asc" ? "asc" : "",
    };
    pages.first().catch(H.fail);
  });
  pages.first().catch(H.fail);
})();
