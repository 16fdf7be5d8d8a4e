// Reminders: subjects with counts (GET /v1/subjects), a subject's reminders
// by channel and lead, and moving its start (PUT /v1/subjects/{id}).
"use strict";
(function () {
  var el = H.el;
  var detail = el("div", { id: "subject-detail" });
  var list = el("div", { id: "subject-list" });
  H.content().appendChild(HForms.newButton("subject"));
  H.content().appendChild(detail);
  H.content().appendChild(list);

  var pages = H.pager(list, {
    key: "subjects",
    path: function (cur) { return "/v1/subjects" + H.query(Object.assign({ limit: 50 }, cur)); },
    render: function (items) {
      return H.table([
        ["subject", function (s) { return el("a", { href: "#id=" + encodeURIComponent(s.subject_id), class: "subject-link", text: s.subject_id }); }],
        ["title", function (s) { return s.title || ""; }],
        ["starts", function (s) { return H.fmtTime(s.start_at); }],
        ["subscribers", function (s) { return counted(s, s.subscribers); }],
        ["reminders", function (s) { return counted(s, s.reminders); }],
      ], items, { cls: "subjects", empty: "No subject yet." });
    },
  });

  // Counts stop at a cap (the answer says so): past it they are lower bounds.
  function counted(s, n) { return s.counts_capped ? n + "+" : String(n); }
  function lead(r) { return r.lead_minutes + " min before"; }

  function showSubject(id) {
    H.clear(detail);
    if (!id) return Promise.resolve();
    var path = "/v1/subjects/" + encodeURIComponent(id);
    return H.get(path).then(function (s) {
      var box = el("section", { class: "detail", id: "subject-" + s.subject_id },
        el("h2", { text: "Subject " + s.subject_id + (s.title ? " · " + s.title : "") }),
        el("p", { text: "Starts " + H.fmtTime(s.start_at) + " · " + counted(s, s.subscribers) +
          " subscriber(s), " + counted(s, s.reminders) + " reminder(s)" }));
      var when = el("input", { type: "datetime-local", id: "move-start" });
      box.appendChild(el("div", { class: "actions" }, el("label", { for: "move-start" }, "Move start to "), when,
        H.button("Move", function () {
          if (!when.value) { H.flash("Pick a new start.", "error"); return; }
          var body = { start_at: H.isoOf(when.value) };
          if (s.title) body.title = s.title;
          if (s.data) body.data = s.data;
          return H.api("PUT", path, body).then(function (r) {
            H.flash("Moved; " + (r.moved_reminders || 0) + " reminder(s) rescheduled.");
            return Promise.all([showSubject(id), pages.reload()]);
          });
        }, "move-subject")));
      box.appendChild(el("h3", { text: "Reminders by channel and lead" }));
      box.appendChild(H.table([
        ["channel type", function (r) { return r.channel_type; }],
        ["lead", lead],
        ["reminders", function (r) { return r.count; }],
      ], s.reminders_by || [], { cls: "reminders-by", empty: "No pending reminder." }));
      detail.appendChild(box);
    });
  }
  function idFromHash() { var m = /^#id=(.+)$/.exec(window.location.hash); return m ? decodeURIComponent(m[1]) : ""; }
  window.addEventListener("hashchange", function () { showSubject(idFromHash()).catch(H.fail); });
  pages.first().catch(H.fail);
  showSubject(idFromHash()).catch(H.fail);
})();
