// Rules: list, a rule's versions as what each changed, its tasks with outcomes,
// enable/disable, and the schedule's next occurrences (schedules:preview).
"use strict";
(function () {
  var el = H.el;
  var detail = el("div", { id: "rule-detail" });
  var list = el("div", { id: "rule-list" });
  H.content().appendChild(HForms.newButton("rule"));
  H.content().appendChild(detail);
  H.content().appendChild(list);

  var pages = H.pager(list, {
    key: "rules",
    path: function (cur) { return "/v1/rules" + H.query(Object.assign({ limit: 50 }, cur)); },
    render: function (items) {
      return H.table([
        ["id", function (r) { return el("a", { href: "#id=" + r.id, class: "rule-link", text: String(r.id) }); }],
        ["name", function (r) { return r.name; }],
        ["status", function (r) { return el("span", { class: "state " + r.status, text: r.status }); }],
        ["version", function (r) { return r.version; }],
        ["schedule", function (r) { return scheduleText(r.schedule); }],
        ["channel", function (r) { return r.channel; }],
        ["updated", function (r) { return H.fmtTime(r.updated_at); }],
        ["", function (r) { return toggle(r); }],
      ], items, { cls: "rules", empty: "No rule yet.", rowAttrs: function (r) { return { "data-rule": r.id }; } });
    },
  });

  function scheduleText(s) {
    if (!s) return "";
    if (s.type === "cron") {
      var words = H.cronWords(s.cron);
      return (words ? words + " · " : "") + "cron " + s.cron + " " + (s.timezone || "");
    }
    if (s.type === "at") return "at " + H.fmtTime(s.at);
    return s.type;
  }

  // Enable or disable: the button the rule's status calls for.
  // Cancels one pending task; the rule plans its next occurrence.
  function cancelTask(rule, t) {
    return H.button("Cancel", function () {
      return H.api("POST", "/v1/rules/" + rule.id + "/tasks/" + t.id + ":cancel").then(function () {
        H.flash("Task " + t.id + " cancelled."); return refresh(idFromHash());
      });
    }, "danger cancel-task");
  }
  function toggle(rule) {
    var path = "/v1/rules/" + rule.id;
    if (rule.status === "enabled") {
      return H.button("Disable", function () {
        return H.api("POST", path + ":disable").then(function () { H.flash("Rule " + rule.id + " disabled."); return refresh(idFromHash()); });
      }, "danger disable-rule");
    }
    if (rule.status === "disabled") {
      return H.button("Enable", function () {
        return H.api("POST", path + ":enable").then(function () { H.flash("Rule " + rule.id + " enabled."); return refresh(idFromHash()); });
      }, "enable-rule");
    }
    return "";
  }

  function showRule(id) {
    H.clear(detail);
    if (!id) return Promise.resolve();
    var path = "/v1/rules/" + encodeURIComponent(id);
    // The newest versions (oldest first): SHOWN of them, and the one before
    // the first, which its changes are counted from.
    var versionsOf = function (rule) {
      return H.get(path + "/versions" + H.query({ after: Math.max(0, rule.version - SHOWN - 1), limit: SHOWN + 1 }));
    };
    return H.get(path).then(function (rule) {
      return Promise.all([rule, versionsOf(rule), H.get(path + "/tasks?limit=20")]);
    }).then(function (r) {
      var rule = r[0], versions = r[1].versions || [], tasks = r[2].tasks || [];
      var box = el("section", { class: "detail", "data-id": rule.id, id: "rule-" + rule.id },
        el("h2", { text: "Rule " + rule.id + ": " + rule.name + " · " + rule.status }));
      box.appendChild(el("p", { class: "actors", text: "created by " + H.actor(rule.created_by) + " · last changed by " + H.actor(rule.changed_by) }));
      box.appendChild(el("p", { class: "receivers", text: rule.expected_receivers === null ? "expected receivers unknown: " + rule.expected_receivers_unknown : "expected receivers " + rule.expected_receivers }));
      if (rule.follow_up) box.appendChild(el("p", { class: "follow-up", text: "each job's follow-up goes " + rule.follow_up.after_secs + " s after it ends, to the recipients who have not read it" }));
      box.appendChild(el("div", { class: "actions" }, toggle(rule)));

      box.appendChild(el("h3", { text: "Next occurrences" }));
      var next = el("div", { id: "rule-next" });
      box.appendChild(next);
      H.api("POST", "/v1/schedules:preview", { schedule: rule.schedule, count: 10 }).then(function (p) {
        // In the rule's own zone, where "09:00" means what the rule says.
        var tz = (rule.schedule && rule.schedule.timezone) || "UTC";
        next.appendChild(el("ol", { class: "instants" }, (p.instants || []).map(function (t) {
          return el("li", { title: t, text: H.fmtTime(t, tz) + " " + tz + " · " + H.rel(t) });
        })));
        if (!(p.instants || []).length) next.appendChild(el("p", { class: "hint", text: "No occurrence left." }));
      }).catch(function (e) { next.appendChild(el("p", { class: "error", text: e.message })); });

      box.appendChild(el("h3", { text: "Versions" }));
      box.appendChild(versionList(versions));

      box.appendChild(el("h3", { text: "Tasks" }));
      box.appendChild(H.table([
        ["task", function (t) { return t.id; }],
        ["version", function (t) { return t.version; }],
        ["planned", function (t) { return H.fmtTime(t.planned_at); }],
        ["state", function (t) { return t.state; }],
        ["planned for", function (t) { return H.actor(t.created_by); }],
        ["changed by", function (t) { return t.changed_by ? H.actor(t.changed_by) : ""; }],
        ["job", function (t) { return t.job_id ? el("a", { href: "/ui/jobs#id=" + t.job_id, text: String(t.job_id) }) : ""; }],
        ["recipients", function (t) { return t.recipients === null ? "" : t.recipients; }],
        ["outcome", function (t) {
          if (!t.job) return t.detail || "";
          var x = t.job.totals;
          return t.job.state + ": " + x.sent + " sent, " + x.failed + " failed, " + x.expired + " expired of " + x.total;
        }],
        ["", function (t) { return t.state === "pending" ? cancelTask(rule, t) : ""; }],
      ], tasks, { cls: "tasks", empty: "No task yet." }));
      detail.appendChild(box);
    });
  }
  // How many versions a rule shows, newest first, each as its changes.
  var SHOWN = 10;
  // What a version holds, without its number and time.
  function content(v) {
    var out = {};
    Object.keys(v).forEach(function (k) { if (k !== "version" && k !== "created_at") out[k] = v[k]; });
    return out;
  }
  // Leaves of `v` by path ("schedule.cron"); an array is one leaf.
  function flatten(v, prefix, out) {
    if (v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length) {
      Object.keys(v).forEach(function (k) { flatten(v[k], prefix ? prefix + "." + k : k, out); });
    } else if (prefix) {
      out[prefix] = v;
    }
    return out;
  }
  function shown(v) { return v === undefined ? "" : JSON.stringify(v); }
  // What changed from `before` to `after`: [path, kind, old, new] with kind
  // added, removed or changed, in path order. A list of plain values says
  // which values came and went rather than repeating both lists.
  function changes(before, after) {
    var a = flatten(content(before), "", {}), b = flatten(content(after), "", {});
    var paths = Object.keys(a).concat(Object.keys(b).filter(function (k) { return !(k in a); })).sort();
    var out = [];
    paths.forEach(function (k) {
      if (!(k in b)) { out.push([k, "removed", shown(a[k]), ""]); return; }
      if (!(k in a)) { out.push([k, "added", "", shown(b[k])]); return; }
      if (shown(a[k]) === shown(b[k])) return;
      if (Array.isArray(a[k]) && Array.isArray(b[k]) && a[k].concat(b[k]).every(function (x) { return x === null || typeof x !== "object"; })) {
        var gone = a[k].filter(function (x) { return b[k].indexOf(x) < 0; });
        var come = b[k].filter(function (x) { return a[k].indexOf(x) < 0; });
        if (gone.length + come.length) {
          out.push([k, "changed", gone.length ? "without " + shown(gone) : "", come.length ? "with " + shown(come) : ""]);
          return;
        }
      }
      out.push([k, "changed", shown(a[k]), shown(b[k])]);
    });
    return out;
  }
  // Newest first: each version's changes from the one before it, and the
  // whole version behind a toggle.
  function versionList(versions) {
    var box = el("div", { class: "versions", id: "rule-versions" });
    var newest = versions.slice(-SHOWN).reverse();
    newest.forEach(function (v) {
      var prev = versions[versions.indexOf(v) - 1];
      var item = el("div", { class: "version", "data-version": v.version },
        el("h4", { text: "v" + v.version + " · " + H.fmtTime(v.created_at) }));
      if (!prev) {
        item.appendChild(el("p", { class: "hint", text: v.version === 1 ? "The first version." : "The version before it is not shown." }));
      } else {
        var diff = changes(prev, v);
        if (!diff.length) item.appendChild(el("p", { class: "hint", text: "Same content as v" + prev.version + " (enabled again, or saved unchanged)." }));
        else item.appendChild(H.table([
          ["field", function (d) { return el("code", { text: d[0] }); }],
          ["", function (d) { return el("span", { class: "diff-kind " + d[1], text: d[1] }); }],
          ["v" + prev.version, function (d) { return el("span", { class: "diff-old", text: d[2] }); }],
          ["", function () { return "→"; }],
          ["v" + v.version, function (d) { return el("span", { class: "diff-new", text: d[3] }); }],
        ], diff, { cls: "diff", rowAttrs: function (d) { return { "data-field": d[0], "data-kind": d[1] }; } }));
      }
      item.appendChild(el("details", { class: "full-version" }, el("summary", { text: "Full version " + v.version }),
        el("pre", { text: H.json(content(v)) })));
      box.appendChild(item);
    });
    if (!newest.length) box.appendChild(el("p", { class: "hint", text: "No version." }));
    return box;
  }

  function refresh(id) { return Promise.all([showRule(id), pages.reload()]); }
  function idFromHash() { var m = /^#id=(\d+)$/.exec(window.location.hash); return m ? m[1] : ""; }
  window.addEventListener("hashchange", function () { showRule(idFromHash()).catch(H.fail); });
  pages.first().catch(H.fail);
  showRule(idFromHash()).catch(H.fail);
})();
