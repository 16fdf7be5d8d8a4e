// Dead letters: dead and failed timers grouped by error (GET /v1/dead-letters),
// the list with replay of one, a selection or every match (the :retry
// endpoints), and jobs with failed sends (/failures, :retry-failed).
"use strict";
(function () {
  var el = H.el;
  var groups = H.section("Groups");
  var groupBox = el("div", { id: "dl-groups" });
  groups.appendChild(groupBox);

  var replay = H.section("Replay everything matching");
  var replayForm = el("form", { id: "dl-replay-form", class: "filters" },
    H.field("state", "state", "select", [["", "dead and failed"], ["dead", "dead"], ["failed", "failed"]]),
    H.field("channel", "channel", "text"),
    H.field("error starts with", "error", "text"),
    H.field("due after", "due_after", "datetime-local"),
    H.field("due before", "due_before", "datetime-local"),
    el("button", { type: "submit", class: "danger" }, "Replay all matching"));
  replay.appendChild(replayForm);

  var listSec = H.section("Dead and failed timers");
  var stateSel = H.field("state", "list_state", "select", [["dead", "dead"], ["failed", "failed"]]);
  var selBtn = H.button("Replay selected", function () {
    var ids = Array.prototype.map.call(document.querySelectorAll("#dl-list input.pick:checked"), function (c) { return c.value; });
    if (!ids.length) { H.flash("Nothing selected.", "error"); return; }
    return Promise.all(ids.map(function (id) { return H.api("POST", "/v1/timers/" + id + ":retry"); })).then(function () {
      H.flash(ids.length + " timer(s) replayed.");
      return reloadAll();
    });
  }, "replay-selected");
  listSec.appendChild(el("div", { class: "filters" }, stateSel, selBtn));
  var list = el("div", { id: "dl-list" });
  listSec.appendChild(list);

  var jobsSec = H.section("Jobs with failed sends");
  var jobsBox = el("div", { id: "dl-jobs" });
  var failures = el("div", { id: "dl-failures" });
  jobsSec.appendChild(jobsBox);
  jobsSec.appendChild(failures);

  // The header's box: selects (or clears) every row of the page shown.
  function pickAll() {
    var box = el("input", { type: "checkbox", class: "pick-all", "aria-label": "select every row of this page" });
    box.addEventListener("change", function () {
      Array.prototype.forEach.call(document.querySelectorAll("#dl-list input.pick"), function (c) { c.checked = box.checked; });
    });
    return box;
  }

  function listState() { return stateSel.querySelector("select").value; }

  var pages = H.pager(list, {
    key: "timers",
    path: function (cur) { return "/v1/timers" + H.query(Object.assign({ state: listState(), order: "desc", limit: 50 }, cur)); },
    render: function (items) {
      return H.table([
        [pickAll(), function (t) { return el("input", { type: "checkbox", class: "pick", value: t.id, "aria-label": "select " + t.id }); }],
        ["id", function (t) { return el("a", { href: "/ui/timers#id=" + t.id, text: String(t.id) }); }],
        ["state", function (t) { return t.state; }],
        ["due", function (t) { return H.fmtTime(t.due_at); }],
        ["channel", function (t) { return t.channel; }],
        ["recipient", function (t) { return t.recipient; }],
        ["attempts", function (t) { return t.attempts; }],
        ["last error", function (t) { return t.last_error || ""; }],
        ["", function (t) {
          return H.button("Replay", function () {
            return H.api("POST", "/v1/timers/" + t.id + ":retry").then(function () { H.flash("Timer " + t.id + " replayed."); return reloadAll(); });
          }, "replay-one");
        }],
      ], items, { cls: "dead", empty: "No dead or failed timer." });
    },
  });
  stateSel.querySelector("select").addEventListener("change", function () { pages.first().catch(H.fail); });

  function retryAll(body) {
    return H.api("POST", "/v1/timers:retry", body).then(function (r) {
      H.flash(r.retried + " timer(s) replayed" + (r.more ? "; more match: replay again." : "."));
      return reloadAll();
    });
  }

  function loadGroups() {
    return H.get("/v1/dead-letters").then(function (d) {
      H.clear(groupBox);
      groupBox.appendChild(H.table([
        ["channel", function (g) { return g.channel; }],
        ["state", function (g) { return g.state; }],
        ["error", function (g) { return g.error || ""; }],
        ["count", function (g) { return g.count; }],
        ["first due", function (g) { return H.fmtTime(g.first_due_at); }],
        ["last due", function (g) { return H.fmtTime(g.last_due_at); }],
        ["newest", function (g) {
          return (g.timer_ids || []).map(function (id) { return el("a", { href: "/ui/timers#id=" + id, class: "id", text: String(id) }); });
        }],
        ["", function (g) {
          return H.button("Replay group", function () {
            var body = { state: g.state, channel: g.channel };
            if (g.error) body.error = g.error;
            return retryAll(body);
          }, "replay-group");
        }],
      ], d.groups || [], { cls: "groups", empty: "No dead letters." }));
      groupBox.appendChild(el("p", { class: "hint", text: "Over the newest " + d.scanned + " dead or failed timers" + (d.truncated ? " (more exist)." : ".") }));
    });
  }

  function loadJobs() {
    return H.get("/v1/jobs?limit=50").then(function (r) {
      var jobs = (r.jobs || []).filter(function (j) { return j.totals && j.totals.failed > 0; });
      H.clear(jobsBox).appendChild(H.table([
        ["job", function (j) { return el("a", { href: "/ui/jobs#id=" + j.id, text: String(j.id) }); }],
        ["state", function (j) { return j.state; }],
        ["channel", function (j) { return j.channel; }],
        ["failed", function (j) { return j.totals.failed; }],
        ["of", function (j) { return j.totals.total; }],
        ["", function (j) {
          return [H.button("Errors", function () { return showFailures(j.id); }, "job-failures"),
            j.state === "cancelled" ? null : H.button("Retry failed", function () {
              return H.api("POST", "/v1/jobs/" + j.id + ":retry-failed").then(function (x) {
                H.flash(x.retried + " failed send(s) of job " + j.id + " retried.");
                return loadJobs();
              });
            }, "job-retry-failed")];
        }],
      ], jobs, { cls: "jobs", empty: "No job (of the newest 50) has failed sends." }));
    });
  }
  function showFailures(id) {
    return H.get("/v1/jobs/" + id + "/failures").then(function (f) {
      H.clear(failures).appendChild(el("h3", { text: "Job " + id + ": failed sends by error" }));
      failures.appendChild(H.table([
        ["error", function (g) { return g.error || ""; }],
        ["count", function (g) { return g.count; }],
      ], f.groups || []));
    });
  }

  function reloadAll() { return Promise.all([loadGroups(), pages.reload()]); }

  replayForm.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var v = H.formValues(replayForm);
    var body = {};
    if (v.state) body.state = v.state;
    if (v.channel) body.channel = v.channel;
    if (v.error) body.error = v.error;
    if (v.due_after) body.due_after = H.isoOf(v.due_after);
    if (v.due_before) body.due_before = H.isoOf(v.due_before);
    retryAll(body).catch(H.fail);
  });

  loadGroups().catch(H.fail);
  pages.first().catch(H.fail);
  loadJobs().catch(H.fail);
})();
