// Subscribers: the directory (GET /v1/subscribers), and one subscriber's
// addresses and mini-program subscribe grants (GET /v1/subscribers/{id}
// and /v1/subscribers/{id}/grants): how many one-time grants each template
// has left, so an operator can tell why a reminder ended `no_grant`.
"use strict";
(function () {
  var el = H.el;
  var detail = el("div", { id: "subscriber-detail" });
  var list = el("div", { id: "subscriber-list" });
  H.content().appendChild(detail);
  H.content().appendChild(list);

  var pages = H.pager(list, {
    key: "subscribers",
    path: function (cur) { return "/v1/subscribers" + H.query(Object.assign({ limit: 50 }, cur)); },
    render: function (items) {
      return H.table([
        ["user", function (s) { return el("a", { href: "#id=" + encodeURIComponent(s.user_id), class: "subscriber-link", text: s.user_id }); }],
        ["addresses", function (s) { return Object.keys(s.addresses || {}).join(", "); }],
        ["time zone", function (s) { return s.timezone || ""; }],
        ["updated", function (s) { return H.fmtTime(s.updated_at); }],
      ], items, { cls: "subscribers", empty: "No subscriber yet." });
    },
  });

  function showSubscriber(id) {
    H.clear(detail);
    if (!id) return Promise.resolve();
    var path = "/v1/subscribers/" + encodeURIComponent(id);
    return Promise.all([H.get(path), H.get(path + "/grants")]).then(function (got) {
      var s = got[0], grants = got[1].grants || [];
      var box = el("section", { class: "detail", id: "subscriber-" + s.user_id },
        el("h2", { text: "Subscriber " + s.user_id }),
        el("p", { text: "Addresses: " + (Object.keys(s.addresses || {}).join(", ") || "none") +
          (s.timezone ? " · " + s.timezone : "") }));
      box.appendChild(el("p", { class: "user-line" }, el("a", { href: "/ui/users#id=" + encodeURIComponent(s.user_id), class: "user-link" },
        "Everything about " + s.user_id + ": reminders, timers, campaign sends")));
      box.appendChild(el("h3", { text: "Subscribe grants" }));
      box.appendChild(H.table([
        ["channel", function (g) { return g.channel; }],
        ["template", function (g) { return g.template_id; }],
        ["left", function (g) { return g.long_term ? "long-term" : String(g.remaining); }],
        ["granted", function (g) { return String(g.granted); }],
        ["spent", function (g) { return String(g.spent); }],
        ["updated", function (g) { return H.fmtTime(g.updated_at); }],
      ], grants, { cls: "grants", empty: "No grant: a mini-program reminder to this user ends no_grant." }));
      detail.appendChild(box);
    });
  }
  function idFromHash() { var m = /^#id=(.+)$/.exec(window.location.hash); return m ? decodeURIComponent(m[1]) : ""; }
  window.addEventListener("hashchange", function () { showSubscriber(idFromHash()).catch(H.fail); });
  pages.first().catch(H.fail);
  showSubscriber(idFromHash()).catch(H.fail);
})();
