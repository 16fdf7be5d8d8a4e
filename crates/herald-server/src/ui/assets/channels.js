// Channels: token validity, pause, quiet hours, outcomes, rate; pause and
// resume (GET /v1/channels, POST /v1/channels/{name}:pause|:resume).
"use strict";
(function () {
  var el = H.el;
  var list = el("div", { id: "channel-list" });
  H.content().appendChild(list);

  function token(c) {
    if (c.token) {
      if (c.token.valid) return "valid" + (c.token.expires_at ? " until " + H.fmtTime(c.token.expires_at) : "");
      // No expiry known: never fetched (the first send fetches it).
      if (!c.token.expires_at) return "not fetched yet";
      return "expired " + H.fmtTime(c.token.expires_at) + " (fetched again at the next send)";
    }
    if (c.token_valid_until) return "valid until " + H.fmtTime(c.token_valid_until);
    return "—";
  }
  function paused(c) {
    if (c.paused) {
      return "paused since " + H.fmtTime(c.paused.since) + (c.paused.until ? " until " + H.fmtTime(c.paused.until) : "") + (c.paused.reason ? " (" + c.paused.reason + ")" : "");
    }
    if (c.paused_until) return "provider backoff until " + H.fmtTime(c.paused_until);
    return "";
  }
  // The provider's answers since this node started are counted in other
  // words (throttled, permanent, quiet): kept on hover, not beside the
  // outcomes, which read as the overview's.
  function answers(c) {
    var o = c.outcomes || {};
    return "provider answers since this node started: " + Object.keys(o).map(function (k) { return k + " " + o[k]; }).join(", ");
  }
  function rate(c) {
    var r = c.rate_per_s !== undefined ? c.rate_per_s : c.current_rate;
    return H.fmtNum(r || 0) + (c.rate_per_sec ? " (limit " + c.rate_per_sec + ")" : "");
  }
  function act(c) {
    var path = "/v1/channels/" + encodeURIComponent(c.name);
    if (c.paused) {
      return H.button("Resume", function () {
        return H.api("POST", path + ":resume").then(function () { H.flash("Channel " + c.name + " resumed."); return load(); });
      }, "resume-channel");
    }
    var reason = el("input", { class: "reason", placeholder: "reason", size: 12 });
    var until = el("input", { class: "until", type: "datetime-local" });
    return el("span", { class: "pause-form" }, reason, until, H.button("Pause", function () {
      var body = {};
      if (reason.value.trim()) body.reason = reason.value.trim();
      if (until.value) body.until = H.isoOf(until.value);
      return H.api("POST", path + ":pause", body).then(function () { H.flash("Channel " + c.name + " paused."); return load(); });
    }, "danger pause-channel"));
  }
  function load() {
    return H.get("/v1/channels").then(function (r) {
      H.clear(list).appendChild(H.table([
        ["channel", function (c) { return c.name; }],
        ["kind", function (c) { return c.kind; }],
        ["token", token],
        ["paused", paused],
        ["quiet hours", function (c) { return c.quiet_hours || ""; }],
        ["outcomes, last minute", function (c) { return el("span", { title: answers(c) }, H.outcomes(c.recent_outcomes)); }],
        ["rate/s", rate],
        ["", act],
      ], r.channels || [], { cls: "channels", rowAttrs: function (c) { return { "data-channel": c.name }; } }));
    });
  }
  load().catch(H.fail);
})();
