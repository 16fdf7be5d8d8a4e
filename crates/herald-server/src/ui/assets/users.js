// Users: one user as an operator looks them up (GET /v1/users/{user_id}):
// their subscriber profile, their reminders, the newest timers addressed to
// them and where they stand in the newest campaigns, each unsent message
// with the reason in words.
"use strict";
(function () {
  var el = H.el;
  var form = el("form", { id: "user-search", class: "filters" },
    H.field("user id", "user", "text"),
    el("button", { type: "submit" }, "Look up"));
  var detail = el("div", { id: "user-detail" });
  H.content().appendChild(form);
  H.content().appendChild(detail);

  function state(s) { return el("span", { class: "state " + s, text: s }); }

  // The profile: addresses, opt-outs, quiet hours; "no profile" when the
  // directory has none (a raw recipient, or a user never registered).
  function profile(p) {
    if (!p) return el("p", { class: "no-profile", text: "No profile: the subscriber directory has no entry for this user." });
    var a = p.addresses || {};
    var addresses = Object.keys(a).map(function (k) {
      var v = a[k];
      if (Array.isArray(v)) return k + ": " + v.join(", ");
      if (v && typeof v === "object") return k + ": " + Object.keys(v).map(function (c) { return c + " " + (typeof v[c] === "string" ? v[c] : JSON.stringify(v[c])); }).join(", ");
      return k + ": " + v;
    });
    var prefs = p.preferences || {};
    var out = [];
    ["channel_types", "topics"].forEach(function (group) {
      var g = prefs[group] || {};
      Object.keys(g).forEach(function (k) {
        if (g[k] === false) out.push((group === "topics" ? "topic " : "") + k);
      });
    });
    var q = p.quiet_hours;
    return el("dl", { class: "kv profile" },
      el("dt", null, "addresses"), el("dd", { text: addresses.join(" · ") || "none" }),
      el("dt", null, "opted out of"), el("dd", { text: out.join(", ") || "nothing" }),
      el("dt", null, "quiet hours"), el("dd", { text: q ? q.start + "–" + q.end + (p.timezone ? " (" + p.timezone + ")" : "") : "none" }),
      el("dt", null, "time zone"), el("dd", { text: p.timezone || "not set" }),
      el("dt", null, "locale"), el("dd", { text: p.locale || "not set" }),
      el("dt", null, "updated"), el("dd", null, H.when(p.updated_at)));
  }

  function reminders(subjects) {
    var rows = [];
    (subjects || []).forEach(function (s) {
      (s.reminders || []).forEach(function (r) { rows.push({ subject: s.subject_id, r: r }); });
    });
    return H.table([
      ["subject", function (x) { return el("a", { href: "/ui/reminders#id=" + encodeURIComponent(x.subject), text: x.subject }); }],
      ["channel type", function (x) { return x.r.channel_type; }],
      ["lead", function (x) { return x.r.lead_minutes + " min before"; }],
      ["channel", function (x) { return x.r.channel; }],
      ["state", function (x) { return state(x.r.state); }],
      ["fires", function (x) { return H.when(x.r.fire_at); }],
      ["timer", function (x) { return el("a", { href: "/ui/timers#id=" + x.r.timer_id, text: String(x.r.timer_id) }); }],
    ], rows, { cls: "user-reminders", empty: "No reminder." });
  }

  function timers(list) {
    return H.table([
      ["timer", function (t) { return el("a", { href: "/ui/timers#id=" + t.id, text: String(t.id) }); }],
      ["kind", function (t) { return t.kind; }],
      ["channel", function (t) { return t.channel; }],
      ["state", function (t) { return state(t.state); }],
      ["due", function (t) { return H.when(t.due_at); }],
      ["attempts", function (t) { return String(t.attempts); }],
      ["last error", function (t) { return H.reason(t.last_error); }],
    ], list || [], { cls: "user-timers", empty: "No timer addressed to this user." });
  }

  function sends(list) {
    return H.table([
      ["job", function (c) {
        return el("a", { href: "/ui/jobs#id=" + c.job_id, class: "job-link", text: "job " + c.job_id + (c.job_name ? " · " + c.job_name : "") });
      }],
      ["channel", function (c) { return c.channel; }],
      ["job state", function (c) { return state(c.job_state); }],
      ["index", function (c) { return String(c.index); }],
      ["send", function (c) { return c.send ? state(c.send.state) : el("span", { class: "not-reached", text: "not reached yet" }); }],
      ["attempts", function (c) { return c.send ? String(c.send.attempts) : ""; }],
      ["error", function (c) { return c.send ? H.reason(c.send.error) : ""; }],
      ["updated", function (c) { return c.send ? H.when(c.send.updated_at) : ""; }],
    ], list || [], { cls: "user-sends", empty: "In none of the jobs searched." });
  }

  function showUser(id) {
    H.clear(detail);
    if (!id) return Promise.resolve();
    form.elements.user.value = id;
    return H.get("/v1/users/" + encodeURIComponent(id)).then(function (u) {
      var box = el("section", { class: "detail", id: "user-view" },
        el("h2", { text: "User " + u.user_id }));
      box.appendChild(el("h3", { text: "Profile" }));
      box.appendChild(profile(u.subscriber));
      box.appendChild(el("h3", { text: "Reminders" }));
      box.appendChild(reminders(u.reminders));
      box.appendChild(el("h3", { text: "Newest timers addressed to the user" }));
      box.appendChild(timers(u.timers));
      box.appendChild(el("h3", { text: "Campaign sends" }));
      box.appendChild(el("p", { class: "hint jobs-searched", text: "Searched the newest " + u.jobs_searched + " jobs." }));
      box.appendChild(sends(u.campaign_sends));
      detail.appendChild(box);
    });
  }
  function idFromHash() { var m = /^#id=(.+)$/.exec(window.location.hash); return m ? decodeURIComponent(m[1]) : ""; }
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var id = form.elements.user.value.trim();
    if (!id) { H.flash("Type a user id.", "error"); return; }
    var hash = "#id=" + encodeURIComponent(id);
    if (window.location.hash === hash) showUser(id).catch(H.fail);
    else window.location.hash = hash;
  });
  window.addEventListener("hashchange", function () { H.flash(""); showUser(idFromHash()).catch(H.fail); });
  showUser(idFromHash()).catch(H.fail);
})();
