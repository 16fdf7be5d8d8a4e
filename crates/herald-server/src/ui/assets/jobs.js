// Jobs: live progress (sent, failed, expired of total), rate, ETA, segments
// by state, failures, cancel, resend to the unread, the jobs one follows and
// is followed by; the list filtered by category (exact) and name (prefix).
// The list and an open job refresh every 2 s.
"use strict";
(function () {
  var el = H.el;
  var form = el("form", { id: "job-filter", class: "filters" },
    H.field("category", "category", "text"),
    H.field("name starts with", "name", "text"),
    el("button", { type: "submit" }, "Filter"));
  var detail = el("div", { id: "job-detail" });
  var list = el("div", { id: "job-list" });
  var filter = {};
  H.content().appendChild(HForms.newButton("job"));
  H.content().appendChild(form);
  H.content().appendChild(detail);
  H.content().appendChild(list);

  function bar(t) {
    return H.progress([["sent", t.sent], ["failed", t.failed], ["expired", t.expired], ["cancelled", t.cancelled], ["in_doubt", t.in_doubt]], t.total);
  }
  function eta(s) {
    if (s === null || s === undefined) return "—";
    if (s < 90) return s + " s";
    if (s < 5400) return Math.round(s / 60) + " min";
    return Math.round(s / 360) / 10 + " h";
  }
  function counts(t) {
    var doubt = t.in_doubt ? " · " + t.in_doubt + " in doubt" : "";
    return t.sent + " sent · " + t.failed + " failed · " + t.expired + " expired" + doubt + " · " + t.remaining + " left of " + t.total;
  }

  var pages = H.pager(list, {
    key: "jobs",
    path: function (cur) { return "/v1/jobs" + H.query(Object.assign({ limit: 50 }, filter, cur)); },
    render: function (items) {
      return H.table([
        ["id", function (j) { return el("a", { href: "#id=" + j.id, class: "job-link", text: String(j.id) }); }],
        ["name", function (j) { return j.name || ""; }],
        ["category", function (j) { return j.category || ""; }],
        ["state", function (j) { return el("span", { class: "state " + j.state, text: j.state }); }],
        ["channel", function (j) { return j.channel; }],
        ["progress", function (j) { return [bar(j.totals), el("div", { class: "small", text: counts(j.totals) })]; }],
        ["rate/s", function (j) { return H.fmtNum(j.rate_per_sec); }],
        ["ETA", function (j) { return eta(j.eta_secs); }],
        ["created", function (j) { return H.fmtTime(j.created_at); }],
        ["", function (j) { return j.state === "running" ? cancelButton(j.id) : ""; }],
      ], items, { cls: "jobs", empty: "No job yet.", rowAttrs: function (j) { return { "data-job": j.id }; } });
    },
  });

  function cancelButton(id) {
    return H.button("Cancel job", function () {
      return H.api("POST", "/v1/jobs/" + id + ":cancel").then(function () { H.flash("Job " + id + " cancelled."); return refresh(); });
    }, "danger cancel-job");
  }

  // A new job now, to the recipients this one delivered to with no read receipt.
  function resendButton(id) {
    return H.button("Resend to unread", H.confirmThen("Send job " + id + "'s message again to everyone who has not read it?", function () {
      return H.api("POST", "/v1/jobs/" + id + ":resend-unread").then(function (nj) {
        H.flash("Job " + nj.id + " resends job " + id + " to " + nj.totals.total + " unread recipients.");
        window.location.hash = "#id=" + nj.id;
        return pages.reload();
      });
    }), "resend-unread");
  }

  function showJob(id) {
    if (!id) { H.clear(detail); return Promise.resolve(); }
    var path = "/v1/jobs/" + encodeURIComponent(id);
    return Promise.all([H.get(path), H.get(path + "/segments?limit=100"), H.get(path + "/failures")]).then(function (r) {
      var j = r[0], segs = r[1].segments || [], fails = r[2];
      H.clear(detail);
      var box = el("section", { class: "detail", "data-id": j.id, id: "job-" + j.id },
        el("h2", { text: "Job " + j.id + (j.name ? " · " + j.name : "") + " · " + j.state }),
        el("p", { class: "labels", text: j.category ? "category " + j.category : "no category" }),
        el("p", { class: "actors", text: "created by " + H.actor(j.created_by) + (j.changed_by ? " · last changed by " + H.actor(j.changed_by) : "") }),
        bar(j.totals),
        el("p", { class: "counts", text: counts(j.totals) + " · " + H.fmtNum(j.rate_per_sec) + "/s now, " + H.fmtNum(j.avg_rate_per_sec) + "/s on average · ETA " + eta(j.eta_secs) }));
      var links = [el("span", { text: j.last_sent_at ? "last sent " + H.fmtTime(j.last_sent_at) : "not sent yet" })];
      if (j.follows) links.push(" · follows ", el("a", { href: "#id=" + j.follows, class: "job-link", text: "job " + j.follows }));
      (j.followed_by || []).forEach(function (f, i) {
        links.push(i === 0 ? " · followed by " : ", ", el("a", { href: "#id=" + f, class: "job-link", text: "job " + f }));
      });
      box.appendChild(el("p", { class: "follows" }, links));
      var actions = el("div", { class: "actions" });
      if (j.state === "running") actions.appendChild(cancelButton(j.id));
      if (j.state === "done" || j.state === "expired") actions.appendChild(resendButton(j.id));
      box.appendChild(actions);
      var byState = j.segments || {};
      box.appendChild(el("h3", { text: "Segments by state" }));
      box.appendChild(el("p", { class: "segments", text: Object.keys(byState).map(function (k) { return k + " " + byState[k]; }).join(" · ") }));
      box.appendChild(H.table([
        ["segment", function (s) { return s.id; }],
        ["range", function (s) { return s.start + "–" + s.end; }],
        ["cursor", function (s) { return s.cursor; }],
        ["state", function (s) { return s.state; }],
        ["owner", function (s) { return s.owner || ""; }],
        ["epoch", function (s) { return s.epoch; }],
        ["attempt", function (s) { return s.attempt; }],
        ["finished", function (s) { return s.finished_at ? H.fmtTime(s.finished_at) : ""; }],
      ], segs, { cls: "segments" }));
      box.appendChild(el("h3", { text: "Failed sends by error" }));
      box.appendChild(H.table([
        ["error", function (g) { return g.error || ""; }],
        ["count", function (g) { return g.count; }],
      ], fails.groups || [], { cls: "failures", empty: "No failed send." }));
      detail.appendChild(box);
    });
  }
  function idFromHash() { var m = /^#id=(\d+)$/.exec(window.location.hash); return m ? m[1] : ""; }
  function refresh() { return Promise.all([pages.reload(), showJob(idFromHash())]); }
  window.addEventListener("hashchange", function () { showJob(idFromHash()).catch(H.fail); });
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var v = H.formValues(form);
    filter = { category: v.category, name: v.name };
    pages.first().catch(H.fail);
  });
  pages.first().then(function () {
    H.poll(refresh, 2000);
  }).catch(H.fail);
})();
