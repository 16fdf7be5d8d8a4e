// Templates: each template at its latest version (GET /v1/templates), one
// template's variants and parts, and a preview of what a send would say
// (POST /v1/templates/{name}:preview) for given data and a subscriber or
// locale. Reminder routes the node cannot send through show first (/readyz).
"use strict";
(function () {
  var el = H.el;
  var warnings = el("div", { id: "route-warnings" });
  var detail = el("div", { id: "template-detail" });
  var list = el("div", { id: "template-list" });
  H.content().appendChild(warnings);
  H.content().appendChild(detail);
  H.content().appendChild(list);

  function showWarnings() {
    return fetch("/readyz", { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (v) {
      H.clear(warnings);
      var w = (v && v.warnings) || [];
      if (!w.length) return;
      warnings.appendChild(el("section", { class: "detail warn" },
        el("h2", { text: "Reminder routes that cannot send" }),
        el("ul", null, w.map(function (t) { return el("li", { text: t }); }))));
    });
  }

  function load() {
    return H.get("/v1/templates").then(function (answer) {
      H.clear(list);
      list.appendChild(H.table([
        ["template", function (t) { return el("a", { href: "#name=" + encodeURIComponent(t.name), class: "template-link", text: t.name }); }],
        ["version", function (t) { return String(t.version); }],
        ["locales", function (t) { return Object.keys(t.locales).join(", "); }],
        ["parts", function (t) { return Object.keys(t.locales["default"] || {}).join(", "); }],
        ["variables", function (t) { return t.variables.join(", "); }],
        ["written", function (t) { return H.fmtTime(t.created_at) + (t.created_by ? " by " + t.created_by : ""); }],
      ], answer.templates || [], { cls: "templates", empty: "No template yet: POST /v1/templates." }));
    });
  }

  function show(name) {
    H.clear(detail);
    if (!name) return Promise.resolve();
    var path = "/v1/templates/" + encodeURIComponent(name);
    return H.get(path).then(function (t) {
      var box = el("section", { class: "detail", id: "template-" + t.name },
        el("h2", { text: "Template " + t.name + " · version " + t.version + " of " + t.versions.length }),
        el("p", { text: (t.description || "") + (t.variables.length ? " Reads: " + t.variables.join(", ") + "." : "") }));
      Object.keys(t.locales).forEach(function (tag) {
        box.appendChild(el("h3", { text: "Variant " + tag }));
        box.appendChild(el("pre", { class: "json", text: H.json(t.locales[tag]) }));
      });
      var form = el("form", { id: "preview-form", class: "filters" },
        H.field("user id", "user_id"),
        H.field("locale", "locale"),
        H.field("time zone", "timezone"),
        el("label", { for: "f-data" }, "data (JSON)",
          el("textarea", { name: "data", id: "f-data", rows: 4, cols: 60 })),
        el("button", { type: "submit", class: "preview-template" }, "Preview"));
      var out = el("div", { id: "preview-out" });
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        var v = H.formValues(form);
        var body = {};
        ["user_id", "locale", "timezone"].forEach(function (k) { if (v[k]) body[k] = v[k]; });
        if (v.data) {
          try { body.data = JSON.parse(v.data); } catch (e) { H.flash("data is not JSON: " + e.message, "error"); return; }
        }
        H.api("POST", path + ":preview", body).then(function (p) {
          H.clear(out);
          out.appendChild(el("p", { text: "Version " + p.version + ", locale " + (p.locale || "default") + ", times in " + p.timezone }));
          Object.keys(p.parts).forEach(function (part) {
            out.appendChild(el("h3", { text: part + " (variant " + p.parts[part].locale + ")" }));
            out.appendChild(el("pre", { class: "json preview-" + part, text: H.json(p.parts[part].message) }));
          });
          Object.keys(p.errors).forEach(function (part) {
            out.appendChild(el("p", { class: "error", text: part + ": " + p.errors[part] }));
          });
        }).catch(H.fail);
      });
      box.appendChild(el("h3", { text: "Preview" }));
      box.appendChild(form);
      box.appendChild(out);
      detail.appendChild(box);
    });
  }
  function nameFromHash() { var m = /^#name=(.+)$/.exec(window.location.hash); return m ? decodeURIComponent(m[1]) : ""; }
  window.addEventListener("hashchange", function () { show(nameFromHash()).catch(H.fail); });
  showWarnings().catch(H.fail);
  load().catch(H.fail);
  show(nameFromHash()).catch(H.fail);
})();
