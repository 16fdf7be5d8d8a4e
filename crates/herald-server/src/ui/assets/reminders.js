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
    render: function (items, answer) {
      var cap = answer && answer.failed_cap;
      return H.table([
        ["subject", function (s) { return el("a", { href: "#id=" + encodeURIComponent(s.subject_id), class: "subject-link", text: s.subject_id }); }],
        ["title", function (s) { return s.title || ""; }],
        ["starts", function (s) { return H.fmtTime(s.start_at); }],
        ["subscribers", function (s) { return counted(s, s.subscribers); }],
        ["reminders", function (s) { return counted(s, s.reminders); }],
        ["failed", function (s) { return failedBadge(s.failed, cap); }],
      ], items, { cls: "subjects", empty: "No subject yet.", rowAttrs: function (s) {
        return { "data-subject": s.subject_id, class: s.failed > 0 ? "has-failed" : null };
      } });
    },
  });

  // Counts stop at a cap (the answer says so): past it they are lower bounds.
  function counted(s, n) { return s.counts_capped ? n + "+" : String(n); }
  function lead(r) { return r.lead_minutes + " min before"; }
  // A subject's failed and dead reminders: a red badge when there are any
  // (counting stops at `cap`, past which the figure is a lower bound).
  function failedBadge(n, cap) {
    n = n || 0;
    var text = String(n) + (cap && n >= cap ? "+" : "");
    return n > 0 ? el("span", { class: "badge bad failed-count", title: "failed or dead reminders", text: text }) : text;
  }
  // The states a reminder's timer can be in, in the words of this page.
  var STATES = [["pending", "pending"], ["done", "sent"], ["failed", "failed"], ["dead", "dead"], ["cancelled", "cancelled"], ["in_doubt", "in doubt"]];
  // How the subject's reminders turned out: by state, the commonest
  // errors, the newest failed ones (user and timer linked).
  function outcomes(o) {
    var box = el("div", { class: "outcomes-of-subject" });
    var by = o.by_state || {};
    var names = STATES.map(function (s) { return s[0]; });
    var parts = STATES.map(function (s) { return s[1] + " " + (by[s[0]] || 0); });
    Object.keys(by).forEach(function (k) { if (names.indexOf(k) < 0) parts.push(k + " " + by[k]); });
    box.appendChild(el("h3", { text: "Outcomes" }));
    box.appendChild(el("p", { class: "by-state", text: parts.join(" · ") +
      (o.capped ? " — from the first " + o.counted + " reminders" : " — of " + o.counted + " reminder(s)") }));
    box.appendChild(el("h3", { text: "Top errors" }));
    box.appendChild(H.table([
      ["error", function (e) { return H.reason(e.error); }],
      ["reminders", function (e) { return String(e.count); }],
    ], o.top_errors || [], { cls: "top-errors", empty: "No reminder failed." }));
    box.appendChild(el("h3", { text: "Newest failed reminders" }));
    box.appendChild(H.table([
      ["user", function (f) { return el("a", { href: "/ui/users#id=" + encodeURIComponent(f.user_id), class: "user-link", text: f.user_id }); }],
      ["channel type", function (f) { return f.channel_type || ""; }],
      ["lead", function (f) { return f.lead_minutes === null || f.lead_minutes === undefined ? "" : lead(f); }],
      ["state", function (f) { return el("span", { class: "state " + f.state, text: f.state }); }],
      ["error", function (f) { return H.reason(f.error); }],
      ["timer", function (f) { return el("a", { href: "/ui/timers#id=" + f.timer_id, class: "timer-link", text: String(f.timer_id) }); }],
      ["updated", function (f) { return H.when(f.updated_at); }],
    ], o.failed || [], { cls: "failed-reminders", empty: "No failed reminder." }));
    return box;
  }

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
      if (s.outcomes) box.appendChild(outcomes(s.outcomes));
      detail.appendChild(box);
    });
  }
  function idFromHash() { var m = /^#id=(.+)$/.exec(window.location.hash); return m ? decodeURIComponent(m[1]) : ""; }
  window.addEventListener("hashchange", function () { showSubject(idFromHash()).catch(H.fail); });
  pages.first().catch(H.fail);
  showSubject(idFromHash()).catch(H.fail);
})();
