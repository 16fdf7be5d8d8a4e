// Herald console: the helpers every page uses. Plain DOM, no framework.
// Everything taken from the API reaches the page through textContent, with
// the characters that hide or reorder text shown escaped (see visible).
"use strict";

// Errors of the page, for the browser tests (and for anyone with devtools).
window.__heraldErrors = [];
window.addEventListener("error", function (e) {
  window.__heraldErrors.push(String(e.message || e));
});
window.addEventListener("unhandledrejection", function (e) {
  window.__heraldErrors.push("unhandled: " + String(e.reason && e.reason.message || e.reason));
});

var H = (function () {
  function meta(name) {
    var m = document.querySelector('meta[name="' + name + '"]');
    return m ? m.getAttribute("content") : "";
  }
  var csrf = meta("csrf-token");
  var isAdmin = meta("herald-admin") === "true";
  var scopes = meta("herald-scopes").split(/\s+/).filter(Boolean);
  // Whether the session's key holds `scope` ("write", "campaign", ...).
  function can(scope) { return scopes.indexOf(scope) >= 0; }
  var mode = meta("herald-mode");
  var TENANT_KEY = "herald.actAs";

  function actAs() {
    if (!isAdmin || mode !== "protected") return "";
    try { return localStorage.getItem(TENANT_KEY) || ""; } catch (e) { return ""; }
  }

  // Characters that reorder text (bidirectional controls) or take no room
  // (zero-width and other invisible ones): a name holding them could pose
  // as another ("invoice\u202Efdp.exe"), so they are shown as \u{XXXX}.
  var HIDDEN = /[\u00AD\u061C\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF\u{E0000}-\u{E007F}]/gu;
  function visible(text) {
    return String(text).replace(HIDDEN, function (c) {
      return "\\u{" + c.codePointAt(0).toString(16).toUpperCase() + "}";
    });
  }

  // el("td", {class: "x", onclick: f}, "text", node, ...): strings become text.
  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === undefined || v === null || v === false) return;
        if (k.slice(0, 2) === "on" && typeof v === "function") node.addEventListener(k.slice(2), v);
        else if (k === "text") node.textContent = visible(v);
        else if (k === "title") node.setAttribute(k, visible(v));
        else node.setAttribute(k, v === true ? "" : String(v));
      });
    }
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }
  function add(node, child) {
    if (child === undefined || child === null || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { add(node, c); }); return; }
    node.appendChild(child instanceof Node ? child : document.createTextNode(visible(child)));
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

  function ApiError(status, body) {
    var e = body && body.error ? body.error : {};
    this.status = status;
    this.code = e.code || "http_" + status;
    // The field the API names, and its words without it (for forms).
    this.field = e.field || "";
    this.detail = e.message || "request failed";
    this.message = (e.message || "request failed") + (e.field ? " (" + e.field + ")" : "");
  }

  // The API, as the page's caller. A 401 sends the browser to the login form.
  function api(method, path, body) {
    var headers = { "Accept": "application/json" };
    if (csrf) headers["X-CSRF-Token"] = csrf;
    var tenant = actAs();
    if (tenant) headers["X-Herald-Tenant"] = tenant;
    var init = { method: method, headers: headers, credentials: "same-origin" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(path, init).then(function (resp) {
      return resp.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        if (resp.status === 401 && mode === "protected") {
          window.location.href = "/ui/login";
          throw new ApiError(401, data);
        }
        if (!resp.ok) throw new ApiError(resp.status, data);
        return data;
      });
    });
  }
  function get(path) { return api("GET", path); }

  function flash(text, kind) {
    var f = document.getElementById("flash");
    clear(f);
    if (text) f.appendChild(el("p", { class: kind || "ok", text: text }));
  }
  // Shows an API failure; returns nothing so a chain can go on.
  function fail(e) {
    flash((e && e.message) || String(e), "error");
  }

  function query(params) {
    var parts = [];
    Object.keys(params).forEach(function (k) {
      var v = params[k];
      if (v === undefined || v === null || v === "") return;
      parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(v));
    });
    return parts.length ? "?" + parts.join("&") : "";
  }

  // The operator's time zone: chosen in the header, remembered in this
  // browser, the browser's own until chosen. Every time on the pages is
  // shown in it, and date pickers are read in it.
  var ZONE_KEY = "herald.zone";
  function browserZone() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC"; } catch (e) { return "UTC"; }
  }
  function validZone(z) {
    try { new Intl.DateTimeFormat("en-GB", { timeZone: z }); return true; } catch (e) { return false; }
  }
  function zone() {
    var z = "";
    try { z = localStorage.getItem(ZONE_KEY) || ""; } catch (e) { z = ""; }
    return z && validZone(z) ? z : browserZone();
  }
  // Wall-clock parts of instant `ms` in zone `z`.
  function partsIn(ms, z) {
    var f = new Intl.DateTimeFormat("en-GB", {
      timeZone: z, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit",
      hour: "2-digit", minute: "2-digit", second: "2-digit",
    });
    var out = {};
    f.formatToParts(new Date(ms)).forEach(function (p) { out[p.type] = p.value; });
    return out;
  }
  function toDate(v) {
    if (v === null || v === undefined || v === "") return null;
    var d = new Date(v);
    return isNaN(d.getTime()) ? null : d;
  }
  // "2026-11-29 09:55:00" in the operator's zone (`z` to name another).
  function fmtTime(v, z) {
    var d = toDate(v);
    if (!d) return v === null || v === undefined ? "" : String(v);
    var p = partsIn(d.getTime(), z || zone());
    return p.year + "-" + p.month + "-" + p.day + " " + p.hour + ":" + p.minute + ":" + p.second;
  }
  // "in 4 min", "2 h ago", "now": how far `v` is from the page's clock.
  function rel(v, nowMs) {
    var d = toDate(v);
    if (!d) return "";
    var diff = d.getTime() - (nowMs === undefined ? Date.now() : nowMs);
    var a = Math.abs(diff);
    var text;
    if (a < 5000) return "now";
    if (a < 60000) text = Math.round(a / 1000) + " s";
    else if (a < 3600000) text = Math.round(a / 60000) + " min";
    else if (a < 172800000) text = Math.round(a / 360000) / 10 + " h";
    else text = Math.round(a / 86400000) + " days";
    return diff > 0 ? "in " + text : text + " ago";
  }
  // A time as a node: the zone's wall time, how far it is, and the exact
  // UTC instant on hover.
  function when(v, z) {
    var d = toDate(v);
    if (!d) return v ? String(v) : "";
    return el("time", { datetime: d.toISOString(), title: d.toISOString() + (z ? " · " + z : "") },
      fmtTime(d, z) + " (" + rel(d) + ")");
  }
  // Milliseconds the zone is ahead of UTC at instant `ms`.
  function offsetAt(ms, z) {
    var p = partsIn(ms, z);
    var wall = Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour, +p.minute, +p.second);
    return wall - Math.floor(ms / 1000) * 1000;
  }
  // A datetime-local value ("2026-11-29T09:55"), read as wall time in the
  // operator's zone, as RFC 3339; "" stays "".
  function isoOf(local) {
    if (!local) return "";
    var m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(local);
    if (!m) return local;
    var wall = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +(m[6] || 0));
    var z = zone();
    var guess = wall - offsetAt(wall, z);
    guess = wall - offsetAt(guess, z);
    return new Date(guess).toISOString();
  }
  // The label of a date picker: says which zone it is read in.
  function zoneNote() { return " (" + zone() + ")"; }

  // A cron expression in words for the usual shapes ("weekdays at 09:00");
  // null for the others, which are shown as written.
  var DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
  function cronWords(expr) {
    var f = String(expr || "").trim().split(/\s+/);
    if (f.length === 6) f = f.slice(1);
    if (f.length !== 5) return null;
    var min = f[0], hour = f[1], dom = f[2], mon = f[3], dow = f[4];
    var num = /^\d+$/;
    var step = /^\*\/(\d+)$/.exec(min);
    if (step && hour === "*" && dom === "*" && mon === "*" && dow === "*") return "every " + step[1] + " minutes";
    if (num.test(min) && hour === "*" && dom === "*" && mon === "*" && dow === "*") return "every hour at :" + pad2(min);
    var hours = hour.split(",");
    if (!num.test(min) || !hours.every(function (h) { return num.test(h); })) return null;
    var at = "at " + hours.map(function (h) { return pad2(h) + ":" + pad2(min); }).join(", ");
    if (mon !== "*") return null;
    if (dom === "*" && dow === "*") return "every day " + at;
    if (dom === "*" && (dow === "1-5" || dow === "MON-FRI")) return "weekdays " + at;
    if (dom === "*" && (dow === "0,6" || dow === "6,0" || dow === "SAT,SUN")) return "weekends " + at;
    if (dom === "*" && /^[0-7](,[0-7])*$/.test(dow)) {
      return "every " + dow.split(",").map(function (d) { return DAYS[+d]; }).join(", ") + " " + at;
    }
    if (num.test(dom) && dow === "*") return "on day " + dom + " of every month " + at;
    return null;
  }
  function pad2(s) { s = String(s); return s.length < 2 ? "0" + s : s; }

  function fmtNum(n) {
    if (n === null || n === undefined) return "";
    if (typeof n !== "number") return String(n);
    return Math.round(n * 10) / 10 + "";
  }
  function json(v) { return JSON.stringify(v, null, 2); }
  // Who made or changed something (`created_by`, `changed_by`): the API
  // key's name and id; null is open access or the node itself.
  function actor(a) {
    if (!a) return "—";
    return (a.key_name || "key") + (a.key_id === null || a.key_id === undefined ? "" : " #" + a.key_id);
  }

  // How attempts ended, in the live window's words and order: the outcomes
  // of /v1/overview's channels and of /v1/channels' recent_outcomes (the
  // engine's LiveOutcome). Every page that shows outcomes uses this list.
  var OUTCOMES = ["delivered", "retry", "failed", "dead", "deferred"];
  // Counts by outcome as "delivered 5 · retry 0 · ...", in OUTCOMES' order,
  // then any outcome the list does not know yet (so none is hidden).
  function outcomes(counts) {
    counts = counts || {};
    var names = OUTCOMES.concat(Object.keys(counts).filter(function (k) { return OUTCOMES.indexOf(k) < 0; }));
    return el("span", { class: "outcomes" }, names.map(function (k, i) {
      return [i ? " · " : "", el("span", { class: "outcome", "data-outcome": k, text: k + " " + (counts[k] || 0) })];
    }));
  }

  // Why a message was not sent, in words, by the code its error starts
  // with (a timer's last_error, a send's error): the pages show the code
  // and this beside it.
  var REASONS = {
    no_address: "the user has no address for this channel's type",
    opted_out: "the user opted out of this channel type or of the message's topic",
    quiet_hours: "held: inside the user's (or the channel's) quiet hours",
    deferred: "held: inside quiet hours, sent when they end",
    capped: "dropped: the user's frequency cap was reached",
    cap_deferred: "held: the user's frequency cap was reached, sent later",
    no_grant: "no mini-program subscribe grant left for the template",
    template_error: "the template could not be rendered for this user",
    expired: "its deadline passed before it could be sent",
    in_doubt: "handed to the provider, but the answer was lost: it may have arrived",
    throttled: "held by a rate limit",
  };
  // The explanation of `error`, "" when its code is not one of REASONS.
  function reasonOf(error) {
    var m = /^([a-z_]+)/.exec(String(error || ""));
    return m && Object.prototype.hasOwnProperty.call(REASONS, m[1]) ? REASONS[m[1]] : "";
  }
  // An error as a node: the code as given, and its explanation when known.
  function reason(error) {
    if (!error) return "";
    var why = reasonOf(error);
    // Codes look like code; an error already in words reads as text.
    var isCode = /^[a-z_]+(:|$)/.test(String(error));
    return el("span", { class: "reason" }, isCode ? el("code", { text: error }) : el("span", { text: error }),
      why ? el("span", { class: "why", text: " — " + why }) : null);
  }

  // A table: columns are [label, function(row) -> text | Node].
  function table(columns, rows, opts) {
    opts = opts || {};
    // A column's label is text, or a node (a select-all box).
    var head = el("tr", null, columns.map(function (c) { return c[0] instanceof Node ? el("th", null, c[0]) : el("th", { text: c[0] }); }));
    var body = el("tbody");
    rows.forEach(function (r) {
      var tr = el("tr", opts.rowAttrs ? opts.rowAttrs(r) : null, columns.map(function (c) {
        var v = c[1](r);
        return el("td", null, v === undefined || v === null ? "" : v);
      }));
      body.appendChild(tr);
    });
    if (!rows.length) {
      body.appendChild(el("tr", null, el("td", { colspan: columns.length, class: "empty", text: opts.empty || "Nothing here." })));
    }
    return el("table", { class: "data" + (opts.cls ? " " + opts.cls : "") }, el("thead", null, head), body);
  }

  // A paginated listing under `container`. `path(params)` builds the URL of
  // a page from the cursor parameters; `key` names the items in the answer;
  // `render(items, answer)` returns the node to show. Works with each
  // endpoint's cursor: next_cursor (?cursor=), next_after, next_before.
  function pager(container, opts) {
    var stack = [];
    var current = {};
    function load(cursor) {
      return get(opts.path(cursor)).then(function (answer) {
        var items = (answer && answer[opts.key]) || [];
        var next = null;
        ["cursor", "after", "before"].forEach(function (name) {
          var v = answer ? answer["next_" + name] : null;
          if (v !== null && v !== undefined) { next = {}; next[name] = v; }
        });
        clear(container);
        container.appendChild(opts.render(items, answer));
        var nav = el("div", { class: "pager" });
        nav.appendChild(el("button", {
          type: "button", class: "prev", disabled: stack.length ? null : true,
          onclick: function () { current = stack.pop() || {}; load(current).catch(fail); },
        }, "Previous"));
        nav.appendChild(el("button", {
          type: "button", class: "next", disabled: next ? null : true,
          onclick: function () { stack.push(current); current = next; load(next).catch(fail); },
        }, "Next"));
        container.appendChild(nav);
        return answer;
      });
    }
    return {
      reload: function () { return load(current); },
      first: function () { stack = []; current = {}; return load({}); },
    };
  }

  // Calls fn now and every ms milliseconds while the page is visible.
  function poll(fn, ms) {
    var timer = null;
    function tick() {
      Promise.resolve().then(fn).catch(fail).then(function () { timer = setTimeout(tick, ms); });
    }
    tick();
    return function stop() { clearTimeout(timer); };
  }

  function button(label, onclick, cls) {
    return el("button", { type: "button", class: cls || null, onclick: function (ev) {
      ev.preventDefault();
      var b = ev.currentTarget;
      b.disabled = true;
      Promise.resolve().then(onclick).catch(fail).then(function () { b.disabled = false; });
    } }, label);
  }

  function confirmThen(text, fn) {
    return function () { if (window.confirm(visible(text))) return fn(); };
  }

  // A labelled form field; `kind` is "select" with options, or an input type.
  function field(label, name, kind, options) {
    var input;
    if (kind === "select") {
      input = el("select", { name: name, id: "f-" + name }, options.map(function (o) {
        return el("option", { value: o[0] }, o[1]);
      }));
    } else {
      input = el("input", { type: kind || "text", name: name, id: "f-" + name });
    }
    return el("label", { for: "f-" + name }, label, input);
  }
  function formValues(form) {
    var out = {};
    Array.prototype.forEach.call(form.elements, function (e) {
      if (e.name) out[e.name] = e.value.trim();
    });
    return out;
  }
  function progress(parts, total) {
    var bar = el("div", { class: "progress", title: parts.map(function (p) { return p[0] + " " + p[1]; }).join(", ") + " of " + total });
    parts.forEach(function (p) {
      var pct = total > 0 ? Math.min(100, (p[1] * 100) / total) : 0;
      var seg = el("span", { class: "seg " + p[0] });
      seg.style.width = pct + "%";
      bar.appendChild(seg);
    });
    return bar;
  }

  function section(title) {
    var s = el("section", null, el("h2", { text: title }));
    document.getElementById("content").appendChild(s);
    return s;
  }

  // The header: who is logged in; the admin's tenant picker.
  function header() {
    var who = document.getElementById("who");
    if (!who) return;
    zonePicker(who);
    if (mode !== "protected") { who.appendChild(document.createTextNode("open mode")); return; }
    var key = meta("herald-key");
    who.appendChild(document.createTextNode(visible((key || "key") + " · tenant " + meta("herald-tenant"))));
    if (isAdmin) {
      var input = el("input", { id: "act-as", placeholder: "act as tenant", value: actAs(), size: 14 });
      var set = el("button", { type: "button", onclick: function () {
        try { localStorage.setItem(TENANT_KEY, input.value.trim()); } catch (e) { /* private mode */ }
        window.location.reload();
      } }, "Switch");
      who.appendChild(el("span", { class: "picker" }, " ", input, set));
    }
  }
  // The zone chooser: the browser's zone, UTC, a few common ones, and any
  // IANA name typed in.
  function zonePicker(where) {
    var current = zone();
    var common = [browserZone(), "UTC", "Asia/Shanghai", "Asia/Tokyo", "Europe/London", "Europe/Paris", "America/New_York", "America/Los_Angeles"];
    if (common.indexOf(current) < 0) common.unshift(current);
    var seen = {};
    var select = el("select", { id: "zone", title: "the time zone times are shown in" },
      common.filter(function (z) { if (seen[z]) return false; seen[z] = true; return true; }).map(function (z) {
        return el("option", { value: z, selected: z === current ? true : null }, z);
      }),
      el("option", { value: "" }, "other…"));
    select.addEventListener("change", function () {
      var z = select.value;
      if (!z) z = (window.prompt("IANA time zone (e.g. Asia/Singapore)") || "").trim();
      if (!z || !validZone(z)) { select.value = current; if (z) flash("unknown time zone " + z, "error"); return; }
      try { localStorage.setItem(ZONE_KEY, z); } catch (e) { /* private mode */ }
      window.location.reload();
    });
    where.appendChild(el("label", { class: "zone", for: "zone" }, "times in ", select, " "));
  }
  document.addEventListener("DOMContentLoaded", header);

  return {
    api: api, get: get, el: el, clear: clear, flash: flash, fail: fail, query: query,
    fmtTime: fmtTime, fmtNum: fmtNum, json: json, table: table, pager: pager, poll: poll,
    button: button, confirmThen: confirmThen, field: field, formValues: formValues,
    isoOf: isoOf, zone: zone, zoneNote: zoneNote, rel: rel, when: when, cronWords: cronWords,
    progress: progress, section: section, visible: visible, actor: actor,
    OUTCOMES: OUTCOMES, outcomes: outcomes, reason: reason, reasonOf: reasonOf, can: can, isAdmin: isAdmin,
    content: function () { return document.getElementById("content"); },
  };
})();
