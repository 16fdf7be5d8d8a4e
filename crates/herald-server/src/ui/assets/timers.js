// Timers: search (GET /v1/timers), a timer's detail with its message and
// send log, cancel and retry. `#id=N` in the address opens a timer.
"use strict";
(function () {
  var el = H.el;
  var STATES = [["", "any state"], ["pending", "pending"], ["done", "done"], ["failed", "failed"], ["dead", "dead"], ["cancelled", "cancelled"], ["in_doubt", "in doubt"]];
  var KINDS = [["", "any kind"], ["timer", "timer"], ["reminder", "reminder"], ["job", "job"]];
  var form = el("form", { id: "timer-search", class: "filters" },
    H.field("id", "id", "text"),
    H.field("recipient", "recipient", "text"),
    H.field("idempotency key", "idempotency_key", "text"),
    H.field("state", "state", "select", STATES),
    H.field("channel", "channel", "text"),
    H.field("kind", "kind", "select", KINDS),
    H.field("due after", "due_after", "datetime-local"),
    H.field("due before", "due_before", "datetime-local"),
    H.field("order", "order", "select", [["asc", "soonest first"], ["desc", "latest first"]]),
    el("button", { type: "submit" }, "Search"));
  var detail = el("div", { id: "timer-detail" });
  var list = el("div", { id: "timer-list" });
  H.content().appendChild(HForms.newButton("timer"));
  H.content().appendChild(form);
  H.content().appendChild(detail);
  H.content().appendChild(list);

  var filter = {};
  var pages = H.pager(list, {
    key: "timers",
    path: function (cur) { return "/v1/timers" + H.query(Object.assign({ limit: 50 }, filter, cur)); },
    render: function (items) {
      return H.table([
        ["id", function (t) { return el("a", { href: "#id=" + t.id, class: "timer-link", "data-id": t.id }, String(t.id)); }],
        ["state", function (t) { return el("span", { class: "state " + t.state, text: t.state }); }],
        ["kind", function (t) { return t.kind; }],
        ["due", function (t) { return H.when(t.due_at); }],
        ["channel", function (t) { return t.channel; }],
        ["recipient", function (t) { return t.recipient; }],
        ["attempts", function (t) { return t.attempts; }],
        ["last error", function (t) { return t.last_error || ""; }],
      ], items, { cls: "timers", empty: "No timer matches." });
    },
  });

  function kv(obj, keys) {
    return el("dl", { class: "kv" }, keys.map(function (k) {
      var v = obj[k];
      if (v === null || v === undefined) return [el("dt", { text: k }), el("dd", { text: "—" })];
      // Times in the operator's zone, with how far they are.
      if (/_at$/.test(k)) return [el("dt", { text: k }), el("dd", null, H.when(v))];
      return [el("dt", { text: k }), el("dd", { text: String(v) })];
    }));
  }

  function showTimer(id) {
    H.clear(detail);
    if (!id) return Promise.resolve();
    var path = "/v1/timers/" + encodeURIComponent(id);
    return Promise.all([H.get(path), H.get(path + "/deliveries")]).then(function (r) {
      var t = r[0], d = r[1].deliveries || [];
      H.clear(detail);
      var box = el("section", { class: "detail", "data-id": t.id },
        el("h2", { text: "Timer " + t.id + " · " + t.state }),
        kv(t, ["kind", "state", "due_at", "channel", "recipient", "priority", "attempts", "last_error", "delivered_at", "idempotency_key", "traceparent", "created_at", "updated_at"]));
      var actions = el("div", { class: "actions" });
      if (t.state === "pending") {
        actions.appendChild(H.button("Cancel timer", function () {
          return H.api("DELETE", path).then(function () { H.flash("Timer " + t.id + " cancelled."); return refresh(t.id); });
        }, "danger cancel-timer"));
      }
      if (t.state === "dead" || t.state === "failed") {
        actions.appendChild(H.button("Retry", function () {
          return H.api("POST", path + ":retry").then(function () { H.flash("Timer " + t.id + " is pending again."); return refresh(t.id); });
        }, "retry-timer"));
      }
      box.appendChild(actions);
      // A reminder's or a subscriber's timer names a user: everything else about them.
      var user = t.to && t.to.user_id ? t.to.user_id : (t.kind === "reminder" ? t.recipient : "");
      if (user) {
        box.appendChild(el("p", { class: "user-line" }, "User ",
          el("a", { href: "/ui/users#id=" + encodeURIComponent(user), class: "user-link", text: user }),
          ": their profile, reminders, timers and campaign sends"));
      }
      box.appendChild(el("h3", { text: "Message" }));
      box.appendChild(el("pre", { class: "message", text: H.json(t.message) }));
      box.appendChild(el("h3", { text: "Send log" }));
      box.appendChild(H.table([
        ["attempt", function (x) { return x.attempt; }],
        ["outcome", function (x) { return x.outcome; }],
        ["status", function (x) { return x.status === null ? "" : x.status; }],
        ["error", function (x) { return x.error || ""; }],
        ["provider id", function (x) { return x.provider_msgid || ""; }],
        ["final", function (x) { return x.final_status || ""; }],
        ["started", function (x) { return H.fmtTime(x.started_at); }],
        ["finished", function (x) { return H.fmtTime(x.finished_at); }],
      ], d, { cls: "deliveries", empty: "No attempt yet." }));
      detail.appendChild(box);
    });
  }
  var listed = false;
  function refresh(id) { return Promise.all([showTimer(id), listed ? pages.reload() : null]); }

  function idFromHash() {
    var m = /^#id=(\d+)$/.exec(window.location.hash);
    return m ? m[1] : "";
  }
  window.addEventListener("hashchange", function () { showTimer(idFromHash()).catch(H.fail); });

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var v = H.formValues(form);
    if (v.id) { window.location.hash = "#id=" + v.id; return; }
    filter = {
      recipient: v.recipient, idempotency_key: v.idempotency_key, state: v.state, channel: v.channel,
      kind: v.kind, due_after: H.isoOf(v.due_after), due_before: H.isoOf(v.due_before), order: v.order,
    };
    listed = true;
    pages.first().catch(H.fail);
  });

  // A timer named in the address is shown alone; the list waits for a search.
  if (idFromHash()) showTimer(idFromHash()).catch(H.fail);
  else { listed = true; pages.first().catch(H.fail); }
})();
