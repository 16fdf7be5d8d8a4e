// Forms that create a timer, a subject, a rule or a job, each in a dialog
// opened by the "New …" button of its list page (HForms.newButton). The API
// judges every value: its error is shown beside the field it names, and a
// created object's page opens. Keys whose scopes cannot write get no button.
"use strict";
var HForms = (function () {
  var el = H.el;

  // A field: [API field, label, input kind, default or options, hint].
  // Kinds: text, number, datetime-local, json, lines (one value a line),
  // select (options [[value, label]]).
  var KINDS = {
    timer: {
      title: "New timer", scope: "write", page: "timers",
      fields: [
        ["channel", "channel", "channel"],
        ["recipient", "recipient", "text"],
        ["fire_at", "fire at", "datetime-local", "", "empty: at once"],
        ["message", "message (JSON)", "json", "{\"text\": \"\"}"],
        ["idempotency_key", "idempotency key", "text", "", "optional"],
        ["priority", "priority", "number", "", "0 to 9, optional"],
      ],
      send: function (v) {
        var body = { channel: v.channel, recipient: v.recipient, message: v.message };
        if (v.fire_at) body.fire_at = H.isoOf(v.fire_at); else body.delay_ms = 0;
        if (v.idempotency_key) body.idempotency_key = v.idempotency_key;
        if (v.priority !== "") body.priority = v.priority;
        return H.api("POST", "/v1/timers", body).then(function (t) {
          return { what: "Timer " + t.id, href: "/ui/timers#id=" + t.id };
        });
      },
    },
    subject: {
      title: "New subject", scope: "write", page: "reminders",
      fields: [
        ["subject_id", "subject id", "text"],
        ["title", "title", "text", "", "optional"],
        ["start_at", "starts at", "datetime-local"],
      ],
      // PUT creates or replaces: an id already taken is refused here, so
      // that a form meant to create never moves a subject.
      send: function (v) {
        if (!v.subject_id) return Promise.reject(local("subject_id", "a subject id is needed"));
        var path = "/v1/subjects/" + encodeURIComponent(v.subject_id);
        return exists(path).then(function (taken) {
          if (taken) throw local("subject_id", "subject " + v.subject_id + " exists already; open it to move its start");
          var body = {};
          if (v.start_at) body.start_at = H.isoOf(v.start_at);
          if (v.title) body.title = v.title;
          return H.api("PUT", path, body);
        }).then(function () {
          return { what: "Subject " + v.subject_id, href: "/ui/reminders#id=" + encodeURIComponent(v.subject_id) };
        });
      },
    },
    rule: {
      title: "New rule", scope: "campaign", page: "rules",
      fields: [
        ["name", "name", "text"],
        ["channel", "channel", "channel"],
        ["schedule.type", "schedule", "select", [["cron", "cron"], ["at", "once, at a time"], ["immediate", "once, now"]]],
        ["schedule.cron", "cron", "text", "0 9 * * 1-5", "with cron: 5 fields, or 6 with seconds"],
        ["schedule.timezone", "time zone", "text", "@zone", "with cron: an IANA name"],
        ["schedule.at", "at", "datetime-local", "", "with once, at a time"],
        ["audience.users", "recipients", "lines", "", "one a line"],
        ["message", "message (JSON)", "json", "{\"text\": \"\"}"],
      ],
      send: function (v) {
        var type = v["schedule.type"];
        var schedule = { type: type };
        if (type === "cron") { schedule.cron = v["schedule.cron"]; schedule.timezone = v["schedule.timezone"]; }
        if (type === "at") schedule.at = H.isoOf(v["schedule.at"]);
        var body = { name: v.name, channel: v.channel, schedule: schedule, audience: { users: v["audience.users"] }, message: v.message };
        return H.api("POST", "/v1/rules", body).then(function (r) {
          return { what: "Rule " + r.id, href: "/ui/rules#id=" + r.id };
        });
      },
    },
    job: {
      title: "New job", scope: "campaign", page: "jobs",
      fields: [
        ["name", "name", "text", "", "optional"],
        ["category", "category", "text", "", "optional"],
        ["channel", "channel", "channel"],
        ["users", "recipients", "lines", "", "one a line; sending starts at once"],
        ["message", "message (JSON)", "json", "{\"text\": \"\"}"],
      ],
      send: function (v) {
        var body = { channel: v.channel, users: v.users, message: v.message };
        if (v.name) body.name = v.name;
        if (v.category) body.category = v.category;
        return H.api("POST", "/v1/jobs", body).then(function (j) {
          return { what: "Job " + j.id, href: "/ui/jobs#id=" + j.id };
        });
      },
    },
  };

  // An error found before asking the API, shaped as its errors are.
  function local(field, message) { return { field: field, detail: message, message: message + " (" + field + ")" }; }
  // Whether GET `path` finds something (404: no).
  function exists(path) {
    return H.get(path).then(function () { return true; }, function (e) {
      if (e && e.status === 404) return false;
      throw e;
    });
  }

  // The channels the admin can list, offered as suggestions (other keys
  // cannot read GET /v1/channels, and type the name).
  var channelNames = null;
  function channelList(id) {
    var list = el("datalist", { id: id });
    if (!H.isAdmin) return list;
    if (!channelNames) channelNames = H.get("/v1/channels").then(function (r) { return (r.channels || []).map(function (c) { return c.name; }); }, function () { return []; });
    channelNames.then(function (names) { names.forEach(function (n) { list.appendChild(el("option", { value: n })); }); });
    return list;
  }

  function input(kind, f, id) {
    var name = f[0], initial = f[3] === "@zone" ? H.zone() : f[3];
    if (kind === "select") {
      return el("select", { id: id, name: name }, initial.map(function (o) { return el("option", { value: o[0] }, o[1]); }));
    }
    if (kind === "json" || kind === "lines") {
      var area = el("textarea", { id: id, name: name, rows: kind === "json" ? 4 : 3, cols: 40 });
      area.value = initial || "";
      return area;
    }
    var attrs = { id: id, name: name, type: kind === "channel" ? "text" : kind === "number" ? "text" : kind, value: initial || null };
    if (kind === "channel") attrs.list = id + "-names";
    if (kind === "number") attrs.inputmode = "numeric";
    return el("input", attrs);
  }

  // The form's values as the API takes them: JSON parsed, lines split,
  // numbers as numbers (anything else as typed, for the API to refuse).
  function values(spec, form) {
    var out = {};
    spec.fields.forEach(function (f) {
      var node = form.querySelector('[name="' + f[0] + '"]');
      var raw = node.value.trim();
      if (f[2] === "json") {
        try { out[f[0]] = raw ? JSON.parse(raw) : null; } catch (e) { throw local(f[0], "not JSON: " + e.message); }
      } else if (f[2] === "lines") {
        out[f[0]] = raw.split(/[\n,]/).map(function (s) { return s.trim(); }).filter(Boolean);
      } else if (f[2] === "number") {
        out[f[0]] = /^-?\d+$/.test(raw) ? Number(raw) : raw;
      } else {
        out[f[0]] = raw;
      }
    });
    return out;
  }

  // The field of the form an error names: the same field, the nearest one
  // holding it ("schedule.cron" for "schedule.cron.minute", "message" for
  // "message.text"), or the first one inside it ("audience.users" for
  // "audience"); null when the form has none of these.
  function fieldFor(form, name) {
    if (!name) return null;
    var boxes = Array.prototype.slice.call(form.querySelectorAll(".form-field"));
    var best = null;
    boxes.forEach(function (b) {
      var f = b.getAttribute("data-field");
      var holds = name === f || name.indexOf(f + ".") === 0 || name.indexOf(f + "[") === 0;
      if (holds && (!best || f.length > best.getAttribute("data-field").length)) best = b;
    });
    return best || boxes.find(function (b) { return b.getAttribute("data-field").indexOf(name + ".") === 0; }) || null;
  }

  function clearErrors(form) {
    Array.prototype.forEach.call(form.querySelectorAll(".field-error, .form-error"), function (p) { H.clear(p); p.hidden = true; });
    Array.prototype.forEach.call(form.querySelectorAll(".form-field.invalid"), function (b) { b.classList.remove("invalid"); });
  }
  function showError(form, e) {
    var box = fieldFor(form, e && e.field);
    var p = box ? box.querySelector(".field-error") : form.querySelector(".form-error");
    var text = box ? (e.detail || e.message) : (e && e.message) || String(e);
    p.appendChild(document.createTextNode(H.visible(text)));
    p.hidden = false;
    if (box) {
      box.classList.add("invalid");
      var focus = box.querySelector("input, select, textarea");
      if (focus) focus.focus();
    }
  }

  // Opens the form of `kind` in a dialog.
  function open(kind) {
    var spec = KINDS[kind];
    var old = document.getElementById("new-dialog");
    if (old) old.remove();
    var form = el("form", { id: "new-" + kind, class: "new-form", novalidate: true },
      el("h2", { text: spec.title }),
      el("p", { class: "form-error error", role: "alert", hidden: true }),
      spec.fields.map(function (f) {
        var id = "new-" + kind + "-" + f[0].replace(/\./g, "-");
        var label = f[1] + (f[2] === "datetime-local" ? H.zoneNote() : "");
        return el("div", { class: "form-field", "data-field": f[0] },
          el("label", { for: id, text: label }),
          input(f[2], f, id),
          f[2] === "channel" ? channelList(id + "-names") : null,
          f[4] ? el("span", { class: "hint", text: f[4] }) : null,
          el("p", { class: "field-error", role: "alert", hidden: true }));
      }),
      el("div", { class: "actions" },
        el("button", { type: "submit", class: "create" }, "Create"),
        el("button", { type: "button", class: "cancel", onclick: function () { dialog.close(); } }, "Cancel")));
    var dialog = el("dialog", { id: "new-dialog", class: "form-dialog" }, form);
    dialog.addEventListener("close", function () { dialog.remove(); });
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var create = form.querySelector("button.create");
      clearErrors(form);
      create.disabled = true;
      Promise.resolve().then(function () { return spec.send(values(spec, form)); }).then(function (made) {
        dialog.close();
        H.flash(made.what + " created.");
        window.location.assign(made.href);
      }, function (e) { showError(form, e); }).then(function () { create.disabled = false; });
    });
    document.body.appendChild(dialog);
    dialog.showModal();
    var first = form.querySelector("input, select, textarea");
    if (first) first.focus();
    return dialog;
  }

  // The "New …" button of a list page: nothing for a key whose scopes
  // cannot create what the page lists.
  function newButton(kind) {
    var spec = KINDS[kind];
    var bar = el("div", { class: "actions new-object" });
    if (spec && H.can(spec.scope)) {
      bar.appendChild(el("button", { type: "button", class: "new-" + kind, onclick: function () { open(kind); } }, spec.title + "…"));
    }
    return bar;
  }

  return { newButton: newButton, open: open };
})();
