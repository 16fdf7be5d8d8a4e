// Jobs: what a job is (name, channel, audience, message, deadline, receipts,
// follow-up, the rule that started it), live progress (sent, failed, expired
// of total), rate, ETA, segments by state (their internals folded away),
// failures, where one recipient stands, cancel, resend to the unread, the
// jobs one follows and is followed by; the list filtered by category (exact)
// and name (prefix).
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

  // What stays while the same job is shown and the rest refreshes: the
  // recipient finder (with what it found) and whether the segments are open.
  var shown = { id: "", box: null, finder: null, segmentsOpen: false };
  // Audience names by id (null: the key may not read audiences).
  var audienceNames = {};
  function audienceName(id) {
    if (Object.prototype.hasOwnProperty.call(audienceNames, id)) return Promise.resolve(audienceNames[id]);
    return H.get("/v1/audiences/" + id).then(function (a) { return a && a.name ? a.name : ""; }, function () { return null; })
      .then(function (n) { audienceNames[id] = n; return n; });
  }

  // The message as a person reads it: each field on its line; a template's
  // name (and pinned version) with the data it is rendered from.
  function messageNode(j) {
    var m = j.message;
    var lines = [];
    if (m && typeof m === "object" && !Array.isArray(m)) {
      Object.keys(m).forEach(function (k) {
        lines.push(k + ": " + (typeof m[k] === "string" ? m[k] : JSON.stringify(m[k])));
      });
    } else if (m !== null && m !== undefined) {
      lines.push(typeof m === "string" ? m : JSON.stringify(m));
    }
    var text = el("div", { class: "message-text", text: lines.join("\n") });
    if (!j.template) return text;
    return [el("div", { class: "template-name", text: "template " + j.template.name + (j.template.version ? " v" + j.template.version : " (latest version)") }),
      lines.length ? el("div", { class: "small", text: "with data:" }) : null, lines.length ? text : null];
  }
  function followUpNode(f) {
    if (!f) return "none";
    var who = f.only === "unread" ? "to the unread" : "route step " + (f.step === undefined ? "" : f.step);
    var out = [f.state + " · " + who + ", " + f.after_secs + " s after the job ends"];
    if (f.job_id) out.push(" · ", el("a", { href: "#id=" + f.job_id, class: "job-link", text: "job " + f.job_id }));
    return out;
  }
  function startedBy(j) {
    if (j.task_id !== null && j.task_id !== undefined) {
      return "rule " + (j.name ? "“" + j.name + "”" : "(unnamed)") + ", task " + j.task_id;
    }
    if (j.follows) return "job " + j.follows + " (its follow-up or resend)";
    return "the API, key " + H.actor(j.created_by);
  }
  function identity(j, audience) {
    var t = j.totals;
    var channel = j.channel + (j.to ? " · to each subscriber's " + j.to.channel_type + " address" : "") +
      (j.topic ? " · topic " + j.topic : "") + (j.critical ? " · critical" : "");
    var rows = [
      ["name", j.name || "(no name)"],
      ["channel", channel],
      ["audience", "audience " + j.audience_id + (audience ? " · " + audience : "")],
      ["message", messageNode(j)],
      ["deadline", j.deadline ? H.when(j.deadline) : "none"],
      ["receipts", "delivered " + t.delivered + " · read " + t.read + " · clicked " + t.clicked],
      ["follow-up", followUpNode(j.follow_up)],
      ["started by", startedBy(j)],
    ];
    if (j.state === "cancelled") rows.push(["cancelled", t.cancelled + " cancelled"]);
    var dl = el("dl", { class: "kv job-identity" });
    rows.forEach(function (r) { dl.appendChild(el("dt", { text: r[0] })); dl.appendChild(el("dd", { class: "job-" + r[0].replace(/ /g, "-") }, r[1])); });
    return dl;
  }

  // "Find a recipient": where one recipient stands in the job.
  function finder(id) {
    var input = el("input", { id: "find-recipient", name: "recipient", placeholder: "recipient", size: 28 });
    var out = el("div", { id: "recipient-result" });
    var f = el("form", { class: "filters find-recipient" },
      el("label", { for: "find-recipient" }, "recipient", input),
      el("button", { type: "submit", class: "find-recipient" }, "Find"));
    f.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var who = input.value.trim();
      H.clear(out);
      if (!who) { out.appendChild(el("p", { class: "hint", text: "Type a recipient." })); return; }
      H.get("/v1/jobs/" + encodeURIComponent(id) + "/sends" + H.query({ recipient: who })).then(function (r) {
        H.clear(out);
        var rows = (r && r.sends) || [];
        if (rows.length) {
          out.appendChild(H.table([
            ["recipient", function (x) { return x.recipient; }],
            ["index", function (x) { return String(x.index); }],
            ["state", function (x) { return el("span", { class: "state " + x.state, text: x.state }); }],
            ["attempts", function (x) { return String(x.attempts); }],
            ["error", function (x) { return H.reason(x.error); }],
            ["provider msgid", function (x) { return x.provider_msgid || ""; }],
            ["updated", function (x) { return H.when(x.updated_at); }],
          ], rows, { cls: "recipient-send" }));
        } else if (r && r.recipient_index !== null && r.recipient_index !== undefined) {
          out.appendChild(el("p", { class: "not-reached", text: who + ": in the audience at index " + r.recipient_index + ", not reached yet." }));
        } else {
          out.appendChild(el("p", { class: "not-in-job", text: who + ": not in this job." }));
        }
      }).catch(H.fail);
    });
    return el("section", { class: "detail finder" }, el("h3", { text: "Find a recipient" }), f, out);
  }

  function showJob(id) {
    if (!id) { H.clear(detail); shown = { id: "", box: null, finder: null, segmentsOpen: false }; return Promise.resolve(); }
    var path = "/v1/jobs/" + encodeURIComponent(id);
    return Promise.all([H.get(path), H.get(path + "/segments?limit=100"), H.get(path + "/failures")]).then(function (r) {
      return audienceName(r[0].audience_id).then(function (name) { r.push(name); return r; });
    }).then(function (r) {
      var j = r[0], segs = r[1].segments || [], fails = r[2], audience = r[3];
      if (idFromHash() !== id) return;
      if (shown.id !== id) {
        H.clear(detail);
        shown = { id: id, box: null, finder: finder(id), segmentsOpen: false };
        detail.appendChild(shown.finder);
      }
      var box = el("section", { class: "detail", "data-id": j.id, id: "job-" + j.id },
        el("h2", { text: "Job " + j.id + (j.name ? " · " + j.name : "") + " · " + j.state }),
        identity(j, audience),
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
      box.appendChild(el("h3", { text: "Failed sends by error" }));
      box.appendChild(H.table([
        ["error", function (g) { return H.reason(g.error); }],
        ["count", function (g) { return g.count; }],
      ], fails.groups || [], { cls: "failures", empty: "No failed send." }));
      var byState = j.segments || {};
      box.appendChild(el("h3", { text: "Segments by state" }));
      box.appendChild(el("p", { class: "segments", text: Object.keys(byState).map(function (k) { return k + " " + byState[k]; }).join(" · ") }));
      // The segments themselves are the engine's business: folded away.
      var internals = el("details", { class: "segment-internals", open: shown.segmentsOpen ? true : null },
        el("summary", { text: "Segment internals (" + segs.length + " listed)" }),
        H.table([
          ["segment", function (s) { return s.id; }],
          ["range", function (s) { return s.start + "–" + s.end; }],
          ["cursor", function (s) { return s.cursor; }],
          ["state", function (s) { return s.state; }],
          ["owner", function (s) { return s.owner || ""; }],
          ["epoch", function (s) { return s.epoch; }],
          ["attempt", function (s) { return s.attempt; }],
          ["finished", function (s) { return s.finished_at ? H.fmtTime(s.finished_at) : ""; }],
        ], segs, { cls: "segments" }));
      internals.addEventListener("toggle", function () { shown.segmentsOpen = internals.open; });
      box.appendChild(internals);
      if (shown.box && shown.box.parentNode === detail) detail.replaceChild(box, shown.box);
      else detail.insertBefore(box, shown.finder);
      shown.box = box;
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
