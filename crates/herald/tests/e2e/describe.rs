//! What Herald says about itself, checked against what it does.
//!
//! - `/openapi.json`: every route of the table is called on the running
//!   binary (a success and an error), and each answer's body is validated
//!   against the document's schema for that route and status; `/docs` is
//!   served, self-contained.
//! - `/metrics` after that traffic: every metric has `# HELP` and `# TYPE`,
//!   and `promtool check metrics` has nothing to say (when installed).
//! - `deploy/`: the alert rules pass `promtool check rules` (when installed),
//!   and the dashboard and rules name only metrics Herald exports.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{Mock, Server, client, now_ms, rfc3339, wait_for};
use serde_json::{Value, json};

/// The schema of the answer to `method path` with `status` and `ctype`:
/// the exact status, else its class (`4XX`), else `default`.
fn answer_schema(doc: &Value, method: &str, path: &str, status: u16, ctype: &str) -> Value {
    let op = &doc["paths"][path][method.to_ascii_lowercase()];
    assert!(op.is_object(), "{method} {path} is not in the document");
    let responses = &op["responses"];
    let class = format!("{}XX", status / 100);
    let mut resp = [status.to_string(), class, "default".to_string()]
        .iter()
        .map(|k| &responses[k])
        .find(|r| r.is_object())
        .unwrap_or_else(|| panic!("{method} {path}: no response documented for {status}"))
        .clone();
    if let Some(r) = resp["$ref"].as_str() {
        resp = doc
            .pointer(r.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("{r} does not resolve"))
            .clone();
    }
    let content = resp["content"]
        .as_object()
        .unwrap_or_else(|| panic!("{method} {path} {status}: no content documented"));
    content.get(ctype).unwrap_or_else(|| {
        panic!(
            "{method} {path} {status}: answered {ctype}, documented {:?}",
            content.keys().collect::<Vec<_>>()
        )
    })["schema"]
        .clone()
}

/// Fails unless `instance` matches `schema` (whose `$ref`s point into `doc`).
fn validate(doc: &Value, schema: &Value, instance: &Value, what: &str) {
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "components": doc["components"],
        "allOf": [schema],
    });
    let validator = jsonschema::validator_for(&root)
        .unwrap_or_else(|e| panic!("{what}: the document's schema does not compile: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what}: the answer does not match the document:\n{}\nanswer: {instance}",
        errors.join("\n")
    );
}

struct Api {
    server: Server,
    doc: Value,
    /// How many answers were checked against the document.
    checked: usize,
    /// The routes of the table called: method and route path.
    called: BTreeSet<(String, String)>,
}

/// The route-table path of a documented path: less an `:action` after a
/// final `{...}` segment (`/v1/jobs/{id}:cancel` is `POST /v1/jobs/{id}`).
fn route_path(path: &str) -> &str {
    match path.rfind("}:") {
        Some(i) if !path[i..].contains('/') => &path[..=i],
        _ => path,
    }
}

impl Api {
    /// Calls `method url` and checks the answer against the document's entry
    /// for `path` (the documented path). Returns the status and the body.
    async fn call(
        &mut self,
        method: &str,
        path: &str,
        url: &str,
        body: Option<(&str, String)>,
    ) -> (u16, Value) {
        let mut req = client().request(
            method.parse().expect("method"),
            format!("{}{url}", self.server.url),
        );
        if let Some((ctype, text)) = &body {
            req = req.header("content-type", *ctype).body(text.clone());
        }
        let resp = req.send().await.expect("request");
        let status = resp.status().as_u16();
        let ctype = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        let text = resp.text().await.expect("body");
        let what = format!("{method} {url} -> {status}");
        let schema = answer_schema(&self.doc, method, path, status, &ctype);
        let value = match ctype.as_str() {
            "application/json" => {
                let v: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {text}"));
                validate(&self.doc, &schema, &v, &what);
                v
            }
            "application/x-ndjson" => {
                let lines: Vec<Value> = text
                    .lines()
                    .map(|l| serde_json::from_str(l).expect("an NDJSON line"))
                    .collect();
                for l in &lines {
                    validate(&self.doc, &schema, l, &what);
                }
                Value::Array(lines)
            }
            _ => {
                validate(&self.doc, &schema, &Value::String(text.clone()), &what);
                Value::String(text)
            }
        };
        if (200..300).contains(&status) {
            // What the server took, the document must call valid.
            check_request(&self.doc, method, path, url, body.as_ref(), &value);
        }
        self.checked += 1;
        self.called
            .insert((method.to_string(), route_path(path).to_string()));
        (status, value)
    }

    async fn json(&mut self, method: &str, path: &str, url: &str, body: Value) -> (u16, Value) {
        self.call(
            method,
            path,
            url,
            Some(("application/json", body.to_string())),
        )
        .await
    }

    async fn get(&mut self, path: &str, url: &str) -> (u16, Value) {
        self.call("GET", path, url, None).await
    }

    /// Calls and asserts the status.
    async fn expect(
        &mut self,
        status: u16,
        method: &str,
        path: &str,
        url: &str,
        body: Option<Value>,
    ) -> Value {
        let (s, v) = match body {
            Some(b) => self.json(method, path, url, b).await,
            None => self.call(method, path, url, None).await,
        };
        assert_eq!(s, status, "{method} {url}: {v}");
        v
    }
}

/// A parameter's value as its schema reads it: a number for an integer, a
/// list for a comma-separated array, else the text.
fn typed(schema: &Value, raw: &str) -> Value {
    match schema["type"].as_str() {
        Some("integer") => raw
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::from(raw)),
        Some("array") => Value::Array(
            raw.split(',')
                .filter(|s| !s.is_empty())
                .map(Value::from)
                .collect(),
        ),
        _ => Value::from(raw),
    }
}

/// Fails unless the document calls `method url` (of the documented `path`)
/// with `body` valid: each path and query parameter is documented and
/// matches its schema, and the body matches the request body's schema for
/// its content type (each line, for NDJSON), or is absent where the
/// document allows that.
///
/// A bulk answer (an array of per-line results) says which lines were
/// taken: only those are checked.
fn check_request(
    doc: &Value,
    method: &str,
    path: &str,
    url: &str,
    body: Option<&(&str, String)>,
    answer: &Value,
) {
    let op = &doc["paths"][path][method.to_ascii_lowercase()];
    let what = format!("{method} {url}");
    let params = op["parameters"].as_array().cloned().unwrap_or_default();
    let param = |name: &str, place: &str| {
        params
            .iter()
            .find(|p| p["name"] == name && p["in"] == place)
            .unwrap_or_else(|| panic!("{what}: {place} parameter {name} is not documented"))
            .clone()
    };
    let parsed = reqwest::Url::parse(&format!("http://x{url}")).expect("a URL");
    // Path parameters: the template's `{name}`s against the URL's segments.
    let (template, _) = path.split_once('?').unwrap_or((path, ""));
    for (t, u) in template.split('/').zip(parsed.path().split('/')) {
        let Some(open) = t.find('{') else { continue };
        let close = t.find('}').expect("a closed parameter");
        let suffix = &t[close + 1..];
        let raw = u.strip_suffix(suffix).unwrap_or(u);
        let raw = percent_decode(raw);
        let p = param(&t[open + 1..close], "path");
        validate(
            doc,
            &p["schema"],
            &typed(&p["schema"], &raw),
            &format!("{what}: path {t}"),
        );
    }
    for (name, raw) in parsed.query_pairs() {
        let p = param(&name, "query");
        validate(
            doc,
            &p["schema"],
            &typed(&p["schema"], &raw),
            &format!("{what}: query {name}"),
        );
    }
    let request = &op["requestBody"];
    if request.is_null() {
        // A body-less operation (an action ignores what it is sent).
        return;
    }
    let Some((ctype, text)) = body.filter(|(_, t)| !t.trim().is_empty()) else {
        assert!(
            request["required"] != true,
            "{what}: taken without a body, which the document requires"
        );
        return;
    };
    let schema = &request["content"][*ctype]["schema"];
    assert!(
        schema.is_object(),
        "{what}: a {ctype} body is not documented"
    );
    match *ctype {
        "application/json" => {
            let v: Value = serde_json::from_str(text).expect("a JSON body");
            validate(doc, schema, &v, &format!("{what}: body"));
        }
        "application/x-ndjson" => {
            // Lines the answer refused are not taken; blank lines are skipped.
            let refused = |n: usize| {
                answer.as_array().is_some_and(|lines| {
                    lines.iter().any(|l| {
                        l["line"] == n && !(200..300).contains(&l["status"].as_u64().unwrap_or(0))
                    })
                })
            };
            let lines = text.lines().enumerate();
            for (_, line) in lines.filter(|(i, l)| !l.trim().is_empty() && !refused(i + 1)) {
                let v: Value = serde_json::from_str(line).expect("an NDJSON line");
                validate(doc, schema, &v, &format!("{what}: line {line}"));
            }
        }
        _ => {}
    }
}

/// `%xx` escapes decoded (path segments of the tests are ASCII).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn id(v: &Value) -> i64 {
    v["id"].as_i64().unwrap_or_else(|| panic!("no id in {v}"))
}

#[tokio::test]
async fn every_route_answers_as_the_document_says() {
    let mock = Mock::start(&[]).await;
    let top = "[reminders.channels]\napp = \"hooks\"\nemail = \"hooks\"\n";
    let mini = format!(
        "\n[[channels]]\nname = \"mini\"\nkind = \"wechat_mini\"\napi_base = \"{}\"\n\
         appid = \"wxmockappid\"\nsecret = \"mock-wechat-secret\"\n",
        mock.url
    );
    let server = Server::start(&Server::webhook_config(&mock.hook(), &mini, top)).await;
    let (st, doc) = common::get_json(&format!("{}/openapi.json", server.url)).await;
    assert_eq!(st, 200, "{doc}");
    assert_eq!(doc["openapi"], "3.1.0");
    // The validation bites: a timer without its fields is not a timer.
    let timer = answer_schema(&doc, "GET", "/v1/timers/{id}", 200, "application/json");
    let root = json!({"components": doc["components"], "allOf": [timer]});
    let v = jsonschema::validator_for(&root).expect("schema");
    assert!(!v.is_valid(&json!({"id": "seven"})));
    let mut api = Api {
        server,
        doc,
        checked: 0,
        called: BTreeSet::new(),
    };
    let later = rfc3339(now_ms() + 86_400_000);

    // Timers.
    let new_timer = json!({"fire_at": later, "channel": "hooks", "recipient": "u1",
        "message": {"m": 1}, "idempotency_key": "k-1"});
    let t = api
        .expect(
            201,
            "POST",
            "/v1/timers",
            "/v1/timers",
            Some(new_timer.clone()),
        )
        .await;
    api.expect(200, "POST", "/v1/timers", "/v1/timers", Some(new_timer))
        .await;
    api.expect(
        400,
        "POST",
        "/v1/timers",
        "/v1/timers",
        Some(json!({"channel": "hooks"})),
    )
    .await;
    let lines = format!(
        "{}\n{{\"channel\": 1}}\n",
        json!({"delay_ms": 0, "channel": "hooks", "recipient": "u2", "message": {"m": 2}})
    );
    let (s, out) = api
        .call(
            "POST",
            "/v1/timers:bulk",
            "/v1/timers:bulk",
            Some(("application/x-ndjson", lines)),
        )
        .await;
    assert_eq!(s, 200, "{out}");
    assert_eq!(out[0]["status"], 201, "{out}");
    assert_eq!(out[1]["status"], 400, "{out}");
    let fired = out[0]["id"].as_i64().expect("bulk id");
    let (s, _) = api
        .call(
            "POST",
            "/v1/timers:bulk",
            "/v1/timers:bulk",
            Some(("text/xml", "<a/>".into())),
        )
        .await;
    assert_eq!(s, 415);
    let tid = id(&t);
    api.expect(
        200,
        "GET",
        "/v1/timers/{id}",
        &format!("/v1/timers/{tid}"),
        None,
    )
    .await;
    api.expect(404, "GET", "/v1/timers/{id}", "/v1/timers/999999", None)
        .await;
    // The bulk timer was due at once: its send log has an attempt.
    let srv = api.server.url.clone();
    wait_for("the bulk timer delivered", Duration::from_secs(15), || {
        let url = format!("{srv}/v1/timers/{fired}");
        async move { common::get_json(&url).await.1["state"] == "done" }
    })
    .await;
    let d = api
        .expect(
            200,
            "GET",
            "/v1/timers/{id}/deliveries",
            &format!("/v1/timers/{fired}/deliveries"),
            None,
        )
        .await;
    assert_eq!(d["deliveries"].as_array().map(Vec::len), Some(1), "{d}");
    let delivery = id(&d["deliveries"][0]);
    api.expect(
        404,
        "GET",
        "/v1/timers/{id}/deliveries",
        "/v1/timers/999999/deliveries",
        None,
    )
    .await;
    // Search, patch, replay and dead letters.
    let tp = format!("/v1/timers/{tid}");
    let patched = api
        .expect(
            200,
            "PATCH",
            "/v1/timers/{id}",
            &tp,
            Some(json!({"priority": 7})),
        )
        .await;
    assert_eq!(patched["priority"], 7, "{patched}");
    api.expect(400, "PATCH", "/v1/timers/{id}", &tp, Some(json!({})))
        .await;
    let page = api
        .expect(
            200,
            "GET",
            "/v1/timers",
            "/v1/timers?limit=1&order=desc",
            None,
        )
        .await;
    let cursor = page["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_string();
    let last = api
        .expect(
            200,
            "GET",
            "/v1/timers",
            &format!("/v1/timers?limit=1&order=desc&cursor={cursor}"),
            None,
        )
        .await;
    assert_eq!(last["timers"].as_array().map(Vec::len), Some(1), "{last}");
    api.expect(400, "GET", "/v1/timers", "/v1/timers?cursor=nope", None)
        .await;
    // A timer the sink refuses fails at once; it is found, grouped and replayed.
    let faults_url = format!("{}/_mock/faults", mock.url);
    let faults = |body: Value| common::post_raw(&faults_url, "application/json", body.to_string());
    assert_eq!(faults(json!({"permanent_status": 422})).await.0, 200);
    let refused = id(&api
        .expect(
            201,
            "POST",
            "/v1/timers",
            "/v1/timers",
            Some(
                json!({"delay_ms": 0, "channel": "hooks", "recipient": "u-refused", "message": {}}),
            ),
        )
        .await);
    wait_for("the refused timer failed", Duration::from_secs(15), || {
        let url = format!("{srv}/v1/timers/{refused}");
        async move { common::get_json(&url).await.1["state"] == "failed" }
    })
    .await;
    assert_eq!(faults(json!({})).await.0, 200);
    let found = api
        .expect(
            200,
            "GET",
            "/v1/timers",
            "/v1/timers?state=failed&channel=hooks",
            None,
        )
        .await;
    assert_eq!(found["timers"][0]["id"], refused, "{found}");
    let dl = api
        .expect(
            200,
            "GET",
            "/v1/dead-letters",
            "/v1/dead-letters?channel=hooks",
            None,
        )
        .await;
    assert_eq!(dl["groups"][0]["timer_ids"], json!([refused]), "{dl}");
    let (s, v) = api
        .get("/v1/dead-letters", "/v1/dead-letters?channel=a&channel=b")
        .await;
    assert_eq!(s, 400, "{v}");
    let rp = format!("/v1/timers/{refused}:retry");
    let v = api
        .expect(200, "POST", "/v1/timers/{id}:retry", &rp, Some(json!({})))
        .await;
    assert_eq!(v["state"], "pending", "{v}");
    api.expect(
        409,
        "POST",
        "/v1/timers/{id}:retry",
        &format!("{tp}:retry"),
        Some(json!({})),
    )
    .await;
    let v = api
        .expect(
            200,
            "POST",
            "/v1/timers:retry",
            "/v1/timers:retry",
            Some(json!({"state": "dead"})),
        )
        .await;
    assert_eq!(v, json!({"retried": 0, "more": false}));
    api.expect(
        400,
        "POST",
        "/v1/timers:retry",
        "/v1/timers:retry",
        Some(json!({"state": "pending"})),
    )
    .await;
    api.expect(
        200,
        "DELETE",
        "/v1/timers/{id}",
        &format!("/v1/timers/{tid}"),
        None,
    )
    .await;
    api.expect(
        409,
        "DELETE",
        "/v1/timers/{id}",
        &format!("/v1/timers/{tid}"),
        None,
    )
    .await;

    // Subjects and reminders.
    let subject = json!({"start_at": later, "title": "Coupon", "data": {"shop": 1}});
    api.expect(
        201,
        "PUT",
        "/v1/subjects/{subject_id}",
        "/v1/subjects/s1",
        Some(subject.clone()),
    )
    .await;
    api.expect(
        200,
        "PUT",
        "/v1/subjects/{subject_id}",
        "/v1/subjects/s1",
        Some(subject),
    )
    .await;
    api.expect(
        400,
        "PUT",
        "/v1/subjects/{subject_id}",
        "/v1/subjects/s1",
        Some(json!({})),
    )
    .await;
    api.expect(
        200,
        "GET",
        "/v1/subjects/{subject_id}",
        "/v1/subjects/s1",
        None,
    )
    .await;
    api.expect(
        404,
        "GET",
        "/v1/subjects/{subject_id}",
        "/v1/subjects/nope",
        None,
    )
    .await;
    api.expect(200, "GET", "/v1/subjects", "/v1/subjects?limit=10", None)
        .await;
    api.expect(400, "GET", "/v1/subjects", "/v1/subjects?limit=0", None)
        .await;
    let reminder =
        json!({"user_id": "alice", "subject_id": "s1", "channel_type": "app", "lead_minutes": 5});
    api.expect(
        201,
        "POST",
        "/v1/reminders",
        "/v1/reminders",
        Some(reminder),
    )
    .await;
    api.expect(
        400,
        "POST",
        "/v1/reminders",
        "/v1/reminders",
        Some(json!({"user_id": "alice"})),
    )
    .await;
    let lines = format!(
        "{}\n",
        json!({"user_id": "bob", "subject_id": "s1", "channel_type": "email", "lead_minutes": 60})
    );
    let (s, out) = api
        .call(
            "POST",
            "/v1/reminders:bulk",
            "/v1/reminders:bulk",
            Some(("application/x-ndjson", lines)),
        )
        .await;
    assert_eq!((s, &out[0]["status"]), (200, &json!(201)), "{out}");
    let r = api
        .expect(
            200,
            "GET",
            "/v1/users/{user_id}/reminders",
            "/v1/users/alice/reminders",
            None,
        )
        .await;
    assert_eq!(r["subjects"][0]["subject_id"], "s1", "{r}");
    let one_user = api
        .expect(200, "GET", "/v1/users/{user_id}", "/v1/users/alice", None)
        .await;
    assert_eq!(one_user["reminders"][0]["subject_id"], "s1", "{one_user}");
    api.expect(400, "GET", "/v1/users/{user_id}", "/v1/users/%20", None)
        .await;
    // Listed and read with its counts once it has a reminder.
    let listed = api
        .expect(200, "GET", "/v1/subjects", "/v1/subjects?limit=10", None)
        .await;
    assert_eq!(listed["subjects"][0]["subscribers"], 2, "{listed}");
    let one = api
        .expect(
            200,
            "GET",
            "/v1/subjects/{subject_id}",
            "/v1/subjects/s1",
            None,
        )
        .await;
    assert_eq!(one["reminders"], 2, "{one}");
    assert_eq!(one["reminders_by"][0]["count"], 1, "{one}");
    assert_eq!(one["reminders_by"][1]["channel_type"], "email", "{one}");
    api.expect(
        400,
        "GET",
        "/v1/users/{user_id}/reminders",
        "/v1/users/%20/reminders",
        None,
    )
    .await;
    let path = "/v1/reminders/{user_id}/{subject_id}";
    api.expect(200, "DELETE", path, "/v1/reminders/alice/s1", None)
        .await;
    api.expect(404, "DELETE", path, "/v1/reminders/alice/s1", None)
        .await;
    api.expect(
        200,
        "DELETE",
        "/v1/subjects/{subject_id}",
        "/v1/subjects/s1",
        None,
    )
    .await;
    api.expect(
        404,
        "DELETE",
        "/v1/subjects/{subject_id}",
        "/v1/subjects/s1",
        None,
    )
    .await;

    // Templates.
    let tpl = json!({"name": "welcome", "description": "a welcome",
        "locales": {"default": {"webhook": {"text": "Hi {{ name }}"}},
                    "zh": {"webhook": {"text": "你好 {{ name }}"}}}});
    api.expect(
        201,
        "POST",
        "/v1/templates",
        "/v1/templates",
        Some(tpl.clone()),
    )
    .await;
    api.expect(409, "POST", "/v1/templates", "/v1/templates", Some(tpl))
        .await;
    api.expect(
        400,
        "POST",
        "/v1/templates",
        "/v1/templates",
        Some(json!({"name": "x", "locales": {"en": {"webhook": {}}}})),
    )
    .await;
    let one = "/v1/templates/{name}";
    api.expect(
        200,
        "PUT",
        one,
        "/v1/templates/welcome",
        Some(json!({"locales": {"default": {"webhook": {"text": "Hello {{ name }}"}}}})),
    )
    .await;
    api.expect(
        404,
        "PUT",
        one,
        "/v1/templates/nobody",
        Some(json!({"locales": {"default": {"webhook": {}}}})),
    )
    .await;
    api.expect(200, "GET", "/v1/templates", "/v1/templates", None)
        .await;
    api.expect(200, "GET", one, "/v1/templates/welcome?version=1", None)
        .await;
    api.expect(404, "GET", one, "/v1/templates/nobody", None)
        .await;
    api.expect(
        200,
        "POST",
        "/v1/templates/{name}:preview",
        "/v1/templates/welcome:preview",
        Some(json!({"locale": "zh-CN", "data": {"name": "Li"}})),
    )
    .await;
    api.expect(
        404,
        "POST",
        "/v1/templates/{name}:preview",
        "/v1/templates/nobody:preview",
        Some(json!({})),
    )
    .await;

    // Subscribers.
    let one = "/v1/subscribers/{user_id}";
    let profile = json!({"timezone": "Asia/Shanghai", "locale": "zh-CN",
        "addresses": {"email": "li+c@example.cn", "sms": "+8613800138000",
            "wechat": {"wx": "oAbC"}, "app": ["tok-1"], "webhook": {"crm": 1}},
        "preferences": {"channel_types": {"sms": false}, "topics": {"ads": false}},
        "quiet_hours": {"start": "22:00", "end": "08:00"}});
    api.expect(201, "PUT", one, "/v1/subscribers/li", Some(profile.clone()))
        .await;
    api.expect(200, "PUT", one, "/v1/subscribers/li", Some(profile))
        .await;
    api.expect(
        400,
        "PUT",
        one,
        "/v1/subscribers/li",
        Some(json!({"addresses": {"email": "no"}})),
    )
    .await;
    api.expect(
        200,
        "PATCH",
        one,
        "/v1/subscribers/li",
        Some(json!({"locale": "en"})),
    )
    .await;
    api.expect(404, "PATCH", one, "/v1/subscribers/nobody", Some(json!({})))
        .await;
    api.expect(200, "GET", one, "/v1/subscribers/li", None)
        .await;
    api.expect(404, "GET", one, "/v1/subscribers/nobody", None)
        .await;
    let grants = "/v1/subscribers/{user_id}/grants";
    let tap = json!({"key": "tap-1", "channel": "mini", "grants": [{"template_id": "TPL_MINI"}]});
    let got = api
        .expect(
            201,
            "POST",
            grants,
            "/v1/subscribers/li/grants",
            Some(tap.clone()),
        )
        .await;
    assert_eq!(got["grants"][0]["remaining"], 1, "{got}");
    api.expect(200, "POST", grants, "/v1/subscribers/li/grants", Some(tap))
        .await;
    api.expect(
        400,
        "POST",
        grants,
        "/v1/subscribers/li/grants",
        Some(json!({"key": "tap-2", "channel": "hooks", "grants": [{"template_id": "T"}]})),
    )
    .await;
    api.expect(200, "GET", grants, "/v1/subscribers/li/grants", None)
        .await;
    let lines = format!(
        "{}\n",
        json!({"user_id": "mei", "addresses": {"email": "m@example.com"}})
    );
    let (s, out) = api
        .call(
            "POST",
            "/v1/subscribers:bulk",
            "/v1/subscribers:bulk",
            Some(("application/x-ndjson", lines)),
        )
        .await;
    assert_eq!((s, &out[0]["status"]), (200, &json!(201)), "{out}");
    let listed = api
        .expect(
            200,
            "GET",
            "/v1/subscribers",
            "/v1/subscribers?limit=10",
            None,
        )
        .await;
    assert_eq!(
        listed["subscribers"].as_array().map(Vec::len),
        Some(2),
        "{listed}"
    );
    api.expect(
        400,
        "GET",
        "/v1/subscribers",
        "/v1/subscribers?limit=0",
        None,
    )
    .await;
    api.expect(200, "DELETE", one, "/v1/subscribers/mei", None)
        .await;
    api.expect(404, "DELETE", one, "/v1/subscribers/mei", None)
        .await;

    // Audiences, rules, jobs.
    let (s, a) = api
        .call(
            "POST",
            "/v1/audiences",
            "/v1/audiences?name=few",
            Some((
                "application/x-ndjson",
                "{\"recipient\":\"a\"}\n{\"recipient\":\"b\"}\n".into(),
            )),
        )
        .await;
    assert_eq!(s, 201, "{a}");
    let (s, _) = api
        .call(
            "POST",
            "/v1/audiences",
            "/v1/audiences",
            Some(("application/x-ndjson", "not json\n".into())),
        )
        .await;
    assert_eq!(s, 400);
    // A line of another shape is refused, and the document says so.
    let (s, v) = api
        .call(
            "POST",
            "/v1/audiences",
            "/v1/audiences",
            Some(("application/x-ndjson", "{\"user\":\"a\"}\n".into())),
        )
        .await;
    assert_eq!(s, 400, "{v}");
    let line = json!({"$ref": "#/components/schemas/RecipientLine"});
    let root = json!({"components": api.doc["components"], "allOf": [line]});
    let lines = jsonschema::validator_for(&root).expect("schema");
    assert!(!lines.is_valid(&json!({"user": "a"})));
    assert!(lines.is_valid(&json!({"recipient": "a"})));
    let aid = id(&a);
    api.expect(
        200,
        "GET",
        "/v1/audiences/{id}",
        &format!("/v1/audiences/{aid}"),
        None,
    )
    .await;
    api.expect(
        404,
        "GET",
        "/v1/audiences/{id}",
        "/v1/audiences/999999",
        None,
    )
    .await;
    let rule = json!({"name": "daily", "schedule": {"type": "cron", "cron": "0 9 * * *", "timezone": "UTC"},
        "audience": {"users": ["u1", "u2"]}, "channel": "hooks", "message": {"text": "hi"}});
    let r = api
        .expect(201, "POST", "/v1/rules", "/v1/rules", Some(rule.clone()))
        .await;
    api.expect(
        400,
        "POST",
        "/v1/rules",
        "/v1/rules",
        Some(json!({"name": "x"})),
    )
    .await;
    let rid = id(&r);
    let rp = format!("/v1/rules/{rid}");
    api.expect(200, "GET", "/v1/rules", "/v1/rules?limit=10", None)
        .await;
    api.expect(400, "GET", "/v1/rules", "/v1/rules?limit=0", None)
        .await;
    api.expect(200, "GET", "/v1/rules/{id}", &rp, None).await;
    api.expect(404, "GET", "/v1/rules/{id}", "/v1/rules/999999", None)
        .await;
    api.expect(200, "PUT", "/v1/rules/{id}", &rp, Some(rule))
        .await;
    api.expect(400, "PUT", "/v1/rules/{id}", &rp, Some(json!({})))
        .await;
    // One planned task cancelled; the rule plans on.
    let mut pending = None;
    for _ in 0..400 {
        let t = api
            .expect(
                200,
                "GET",
                "/v1/rules/{id}/tasks",
                &format!("{rp}/tasks"),
                None,
            )
            .await;
        pending = t["tasks"]
            .as_array()
            .and_then(|ts| ts.iter().find(|t| t["state"] == "pending"))
            .and_then(|t| t["id"].as_i64());
        if pending.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let tid = pending.expect("the planner plans the rule's next occurrence");
    let task_path = "/v1/rules/{id}/tasks/{task_id}:cancel";
    let t = api
        .expect(
            200,
            "POST",
            task_path,
            &format!("{rp}/tasks/{tid}:cancel"),
            None,
        )
        .await;
    assert_eq!(t["state"], "cancelled", "{t}");
    api.expect(
        404,
        "POST",
        task_path,
        &format!("{rp}/tasks/999999:cancel"),
        None,
    )
    .await;
    api.expect(
        200,
        "POST",
        "/v1/rules/{id}:enable",
        &format!("{rp}:enable"),
        None,
    )
    .await;
    api.expect(
        200,
        "POST",
        "/v1/rules/{id}:disable",
        &format!("{rp}:disable"),
        None,
    )
    .await;
    api.expect(
        404,
        "POST",
        "/v1/rules/{id}:enable",
        "/v1/rules/999999:enable",
        None,
    )
    .await;
    api.expect(
        200,
        "GET",
        "/v1/rules/{id}/versions",
        &format!("{rp}/versions"),
        None,
    )
    .await;
    api.expect(
        404,
        "GET",
        "/v1/rules/{id}/versions",
        "/v1/rules/999999/versions",
        None,
    )
    .await;
    api.expect(
        200,
        "GET",
        "/v1/rules/{id}/tasks",
        &format!("{rp}/tasks"),
        None,
    )
    .await;
    api.expect(
        400,
        "GET",
        "/v1/rules/{id}/tasks",
        &format!("{rp}/tasks?limit=x"),
        None,
    )
    .await;
    let job = json!({"audience_id": aid, "channel": "hooks", "message": {"m": 1}});
    let j = api
        .expect(201, "POST", "/v1/jobs", "/v1/jobs", Some(job))
        .await;
    api.expect(
        400,
        "POST",
        "/v1/jobs",
        "/v1/jobs",
        Some(json!({"channel": "hooks"})),
    )
    .await;
    let jid = id(&j);
    let jp = format!("/v1/jobs/{jid}");
    api.expect(200, "GET", "/v1/jobs", "/v1/jobs", None).await;
    api.expect(400, "GET", "/v1/jobs", "/v1/jobs?before=x", None)
        .await;
    api.expect(200, "GET", "/v1/jobs/{id}", &jp, None).await;
    api.expect(404, "GET", "/v1/jobs/{id}", "/v1/jobs/999999", None)
        .await;
    api.expect(
        200,
        "GET",
        "/v1/jobs/{id}/segments",
        &format!("{jp}/segments"),
        None,
    )
    .await;
    api.expect(
        404,
        "GET",
        "/v1/jobs/{id}/segments",
        "/v1/jobs/999999/segments",
        None,
    )
    .await;
    api.expect(
        200,
        "GET",
        "/v1/jobs/{id}/sends",
        &format!("{jp}/sends?start=0&end=2"),
        None,
    )
    .await;
    api.expect(
        400,
        "GET",
        "/v1/jobs/{id}/sends",
        &format!("{jp}/sends?start=x"),
        None,
    )
    .await;
    let stranger = api
        .expect(
            200,
            "GET",
            "/v1/jobs/{id}/sends",
            &format!("{jp}/sends?recipient=nobody-at-all"),
            None,
        )
        .await;
    assert!(stranger.get("recipient_index").is_none(), "{stranger}");
    api.expect(
        400,
        "GET",
        "/v1/jobs/{id}/sends",
        &format!("{jp}/sends?recipient=a&start=0"),
        None,
    )
    .await;
    let f = api
        .expect(
            200,
            "GET",
            "/v1/jobs/{id}/failures",
            &format!("{jp}/failures"),
            None,
        )
        .await;
    assert_eq!(f["truncated"], false, "{f}");
    api.expect(
        404,
        "GET",
        "/v1/jobs/{id}/failures",
        "/v1/jobs/999999/failures",
        None,
    )
    .await;
    let r = api
        .expect(
            200,
            "POST",
            "/v1/jobs/{id}:retry-failed",
            &format!("{jp}:retry-failed"),
            None,
        )
        .await;
    assert_eq!(r["job"]["id"], jid, "{r}");
    let r = api
        .expect(
            200,
            "POST",
            "/v1/jobs/{id}:retry-in-doubt",
            &format!("{jp}:retry-in-doubt"),
            None,
        )
        .await;
    assert_eq!(r["retried"], 0, "{r}");
    api.expect(
        404,
        "POST",
        "/v1/jobs/{id}:retry-in-doubt",
        "/v1/jobs/999999:retry-in-doubt",
        None,
    )
    .await;
    // The job may have finished already: cancelling one that ended is a 409.
    let (s, v) = api
        .call(
            "POST",
            "/v1/jobs/{id}:cancel",
            &format!("{jp}:cancel"),
            None,
        )
        .await;
    assert!(s == 200 || s == 409, "{s} {v}");
    api.expect(
        404,
        "POST",
        "/v1/jobs/{id}:cancel",
        "/v1/jobs/999999:cancel",
        None,
    )
    .await;

    let v = api
        .expect(200, "GET", "/v1/audiences", "/v1/audiences?limit=10", None)
        .await;
    assert_eq!(v["audiences"][0]["id"], aid, "{v}");
    api.expect(
        400,
        "GET",
        "/v1/audiences",
        "/v1/audiences?cursor=nope",
        None,
    )
    .await;
    // Deleting: the audience while its job names it, then the job once it
    // has ended, then the audience.
    let srv = api.server.url.clone();
    wait_for("the job ended", Duration::from_secs(15), || {
        let url = format!("{srv}{jp}");
        async move { common::get_json(&url).await.1["state"] != "running" }
    })
    .await;
    let e = api
        .expect(
            409,
            "DELETE",
            "/v1/audiences/{id}",
            &format!("/v1/audiences/{aid}"),
            None,
        )
        .await;
    assert_eq!(e["error"]["code"], "audience_in_use", "{e}");
    // Resent to its unread (nobody sent a read receipt): a new job, unless
    // the cancel above came before the job ended.
    let resend = "/v1/jobs/{id}:resend-unread";
    let (s, v) = api
        .json("POST", resend, &format!("{jp}:resend-unread"), json!({}))
        .await;
    match s {
        201 => assert_eq!(v["follows"], jid, "{v}"),
        409 => assert_eq!(v["error"]["code"], "not_resendable", "{v}"),
        _ => panic!("{s} {v}"),
    }
    api.expect(
        400,
        "POST",
        resend,
        &format!("{jp}:resend-unread"),
        Some(json!({"message": "not an object"})),
    )
    .await;
    api.expect(404, "POST", resend, "/v1/jobs/999999:resend-unread", None)
        .await;
    api.expect(404, "DELETE", "/v1/jobs/{id}", "/v1/jobs/999999", None)
        .await;
    let gone = api.expect(200, "DELETE", "/v1/jobs/{id}", &jp, None).await;
    assert_eq!(gone["id"], jid, "{gone}");
    api.expect(404, "GET", "/v1/jobs/{id}", &jp, None).await;
    api.expect(
        200,
        "DELETE",
        "/v1/audiences/{id}",
        &format!("/v1/audiences/{aid}"),
        None,
    )
    .await;
    api.expect(
        404,
        "GET",
        "/v1/audiences/{id}",
        &format!("/v1/audiences/{aid}"),
        None,
    )
    .await;
    let preview = json!({"schedule": {"type": "cron", "cron": "0 9 * * *", "timezone": "UTC"},
        "count": 2, "from": "2030-01-01T00:00:00Z"});
    let v = api
        .expect(
            200,
            "POST",
            "/v1/schedules:preview",
            "/v1/schedules:preview",
            Some(preview),
        )
        .await;
    assert_eq!(v["instants"].as_array().map(Vec::len), Some(2), "{v}");
    api.expect(
        400,
        "POST",
        "/v1/schedules:preview",
        "/v1/schedules:preview",
        Some(json!({"schedule": {"type": "cron", "cron": "nonsense"}})),
    )
    .await;

    // Calendars.
    let one = "/v1/calendars/{name}";
    let cal = json!({"time_zone": "Europe/Berlin", "working_weekdays": ["mon", "tue"],
        "years": {"2030": {"source": "test", "holidays": ["2030-01-01"], "workdays": ["2030-01-05"]}}});
    api.expect(200, "PUT", one, "/v1/calendars/acme", Some(cal))
        .await;
    api.expect(
        400,
        "PUT",
        one,
        "/v1/calendars/acme",
        Some(json!({"time_zone": "UTC", "working_weekdays": ["someday"]})),
    )
    .await;
    api.expect(200, "GET", "/v1/calendars", "/v1/calendars", None)
        .await;
    api.expect(200, "GET", one, "/v1/calendars/cn", None).await;
    api.expect(404, "GET", one, "/v1/calendars/nowhere", None)
        .await;

    // Channels and deliveries.
    api.expect(200, "GET", "/v1/channels", "/v1/channels", None)
        .await;
    let v = api
        .expect(
            200,
            "POST",
            "/v1/channels/{name}:pause",
            "/v1/channels/hooks:pause",
            Some(json!({"reason": "checking the document"})),
        )
        .await;
    assert_eq!(v["paused"]["reason"], "checking the document", "{v}");
    // The body is optional: none at all pauses too.
    let v = api
        .expect(
            200,
            "POST",
            "/v1/channels/{name}:pause",
            "/v1/channels/hooks:pause",
            None,
        )
        .await;
    assert!(v["paused"]["since"].is_string(), "{v}");
    api.expect(
        404,
        "POST",
        "/v1/channels/{name}:pause",
        "/v1/channels/nope:pause",
        Some(json!({})),
    )
    .await;
    let v = api
        .expect(
            200,
            "POST",
            "/v1/channels/{name}:resume",
            "/v1/channels/hooks:resume",
            None,
        )
        .await;
    assert_eq!(v["paused"], Value::Null, "{v}");
    api.expect(
        404,
        "POST",
        "/v1/channels/{name}:resume",
        "/v1/channels/nope:resume",
        None,
    )
    .await;
    let path = "/v1/channels/{name}/callback";
    let (s, v) = api.get(path, "/v1/channels/hooks/callback").await;
    assert!((400..500).contains(&s), "{s} {v}");
    let (s, v) = api
        .call(
            "POST",
            path,
            "/v1/channels/nope/callback",
            Some(("text/xml", "<xml/>".into())),
        )
        .await;
    assert!((400..500).contains(&s), "{s} {v}");
    // A webhook delivery cannot be recalled.
    let (s, v) = api
        .call(
            "POST",
            "/v1/deliveries/{id}:recall",
            &format!("/v1/deliveries/{delivery}:recall"),
            None,
        )
        .await;
    assert!((400..500).contains(&s), "{s} {v}");
    let v = api
        .expect(
            200,
            "POST",
            "/v1/receipts",
            "/v1/receipts",
            Some(json!({"delivery_id": delivery, "event": "read"})),
        )
        .await;
    assert_eq!(v["recorded"], true, "{v}");
    api.expect(
        400,
        "POST",
        "/v1/receipts",
        "/v1/receipts",
        Some(json!({"delivery_id": delivery, "event": "seen"})),
    )
    .await;

    // Keys and audit.
    let k = api
        .expect(
            201,
            "POST",
            "/v1/keys",
            "/v1/keys",
            Some(json!({"tenant": "acme", "scopes": ["read"], "name": "ro"})),
        )
        .await;
    api.expect(
        400,
        "POST",
        "/v1/keys",
        "/v1/keys",
        Some(json!({"tenant": "acme"})),
    )
    .await;
    api.expect(200, "GET", "/v1/keys", "/v1/keys", None).await;
    api.expect(400, "GET", "/v1/keys", "/v1/keys?limit=0", None)
        .await;
    let kid = id(&k);
    api.expect(
        200,
        "DELETE",
        "/v1/keys/{id}",
        &format!("/v1/keys/{kid}"),
        None,
    )
    .await;
    api.expect(404, "DELETE", "/v1/keys/{id}", "/v1/keys/999999", None)
        .await;
    api.expect(200, "GET", "/v1/audit", "/v1/audit", None).await;
    api.expect(400, "GET", "/v1/audit", "/v1/audit?limit=0", None)
        .await;
    api.expect(
        200,
        "GET",
        "/v1/audit",
        "/v1/audit?route=/v1/keys*&status=2xx&key=admin&order=asc",
        None,
    )
    .await;
    api.expect(400, "GET", "/v1/audit", "/v1/audit?status=9xx", None)
        .await;

    // Operations.
    api.expect(200, "GET", "/v1/stats", "/v1/stats", None).await;
    api.expect(200, "GET", "/v1/cluster", "/v1/cluster", None)
        .await;
    let v = api
        .expect(200, "GET", "/v1/overview", "/v1/overview", None)
        .await;
    assert!(v["timers"].is_object(), "{v}");
    let v = api
        .expect(200, "GET", "/v1/forecast", "/v1/forecast?horizon=day", None)
        .await;
    assert_eq!(v["horizon"], "day", "{v}");
    api.expect(
        400,
        "GET",
        "/v1/forecast",
        "/v1/forecast?horizon=week",
        None,
    )
    .await;
    let r = api
        .expect(
            200,
            "GET",
            "/v1/reports",
            "/v1/reports?group_by=channel,outcome",
            None,
        )
        .await;
    assert!(r["rows"].is_array(), "{r}");
    let e = api
        .expect(400, "GET", "/v1/reports", "/v1/reports?group_by=nope", None)
        .await;
    assert_eq!(e["error"]["field"], "group_by", "{e}");
    // The file the server started with, unchanged: nothing to apply.
    let r = api
        .expect(200, "POST", "/v1/admin:reload", "/v1/admin:reload", None)
        .await;
    assert!(r["applied"].is_array(), "{r}");

    api.expect(200, "GET", "/healthz", "/healthz", None).await;
    api.expect(200, "GET", "/readyz", "/readyz", None).await;
    let m = api.expect(200, "GET", "/metrics", "/metrics", None).await;
    let metrics_text = m.as_str().unwrap_or_default().to_string();
    api.expect(200, "GET", "/openapi.json", "/openapi.json", None)
        .await;
    let page = api.expect(200, "GET", "/docs", "/docs", None).await;
    let page = page.as_str().unwrap_or_default();
    assert!(
        page.contains("/openapi.json"),
        "the page renders the document"
    );
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "the page loads nothing from elsewhere"
    );
    // Every route of the table was called.
    for p in herald_server::ROUTES {
        let key = (p.verb.as_str().to_string(), p.path.to_string());
        assert!(
            api.called.contains(&key),
            "{} {} is never called here",
            p.verb.as_str(),
            p.path
        );
    }
    assert!(api.checked > 70, "{} answers checked", api.checked);

    // The metrics, after all that traffic.
    let exported = described_metrics(&metrics_text);
    promtool(&["check", "metrics"], Some(&metrics_text));
    for file in ["deploy/grafana/herald.json", "deploy/prometheus/alerts.yml"] {
        let text = std::fs::read_to_string(repo_file(file)).expect("deploy file");
        for name in metric_names(&text) {
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s).filter(|b| exported.contains(*b)))
                .unwrap_or(&name);
            assert!(
                exported.contains(base) || ONLY_AFTER_AN_EVENT.contains(&base),
                "{file} uses {name}, which Herald does not export"
            );
        }
    }
}

/// Metrics that appear only once their event has happened (they carry a
/// label known only then).
const ONLY_AFTER_AN_EVENT: &[&str] = &[
    // Label `token`: the first failed refresh of a provider token.
    "herald_token_refresh_failures_total",
    // Label `loop`: the first restart of a core loop.
    "herald_loop_restarts_total",
];

/// The names of the metrics in a Prometheus text exposition; fails on a
/// sample whose metric has no `# HELP` or `# TYPE` line.
fn described_metrics(text: &str) -> BTreeSet<String> {
    let mut help = BTreeSet::new();
    let mut types = std::collections::BTreeMap::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next(), words.next()) {
            (Some("#"), Some("HELP"), Some(name), Some(_)) => {
                help.insert(name.to_string());
            }
            (Some("#"), Some("TYPE"), Some(name), Some(kind)) => {
                types.insert(name.to_string(), kind.to_string());
            }
            _ => {}
        }
    }
    let mut samples = 0;
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let name = line
            .split(|c: char| c == '{' || c.is_whitespace())
            .next()
            .unwrap_or_default();
        let base = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s).filter(|b| {
                    matches!(
                        types.get(*b).map(String::as_str),
                        Some("histogram" | "summary")
                    )
                })
            })
            .unwrap_or(name);
        assert!(help.contains(base), "{name} has no # HELP line:\n{text}");
        assert!(types.contains_key(base), "{name} has no # TYPE line");
        samples += 1;
    }
    assert!(samples > 20, "few samples: {text}");
    for must in [
        "herald_deliveries_total",
        "herald_fire_lateness_seconds",
        "herald_owned_shards",
        "herald_store_errors_total",
        "herald_inflight_deliveries",
    ] {
        assert!(help.contains(must), "{must} is not exported");
    }
    help
}

/// Every `herald_...` name in a text.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("herald_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        // A word that merely contains `herald_` (say `the_herald_x`) is not a name.
        let starts_word = rest[..i]
            .chars()
            .last()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        if starts_word {
            out.insert(tail[..end].to_string());
        }
        rest = &tail[end..];
    }
    out
}

fn repo_file(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

/// Runs `promtool ARGS` (with `stdin`) and fails on anything it reports;
/// without `promtool` on PATH, says so and returns.
fn promtool(args: &[&str], stdin: Option<&str>) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let child = Command::new("promtool")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "SKIPPED: promtool {args:?}: promtool is not installed ({e}); the test's own checks ran"
            );
            return;
        }
    };
    if let Some(mut input) = child.stdin.take() {
        input
            .write_all(stdin.unwrap_or_default().as_bytes())
            .expect("promtool stdin");
    }
    let out = child.wait_with_output().expect("promtool");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?} failed:\n{said}");
    if args == ["check", "metrics"] {
        assert!(
            said.trim().is_empty(),
            "promtool check metrics says:\n{said}"
        );
    }
}

#[test]
fn the_alert_rules_pass_promtool_and_the_dashboard_is_json() {
    let rules = repo_file("deploy/prometheus/alerts.yml");
    promtool(&["check", "rules", rules.to_str().expect("path")], None);
    let text = std::fs::read_to_string(repo_file("deploy/grafana/herald.json")).expect("dashboard");
    let dash: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let titles: Vec<&str> = dash["panels"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["title"].as_str())
        .collect();
    for want in [
        "Delivery rate",
        "Fire lateness",
        "Outcomes by channel",
        "In flight and waiting",
        "Store errors",
        "Shards per node",
    ] {
        assert!(titles.contains(&want), "no panel {want:?} in {titles:?}");
    }
    for p in dash["panels"].as_array().into_iter().flatten() {
        for t in p["targets"].as_array().into_iter().flatten() {
            assert!(
                t["expr"].as_str().is_some_and(|e| e.contains("herald_")),
                "{t}"
            );
        }
    }
}

/// `path` with each `{...}` filled by a value its parameter takes.
fn filled(path: &str) -> String {
    path.replace("{id}", "1")
        .replace("{user_id}", "u-1")
        .replace("{subject_id}", "s-1")
        .replace("{name}", "hooks")
}

/// The methods `Allow` lists, upper-case and sorted.
fn allow_of(resp: &reqwest::Response) -> BTreeSet<String> {
    resp.headers()
        .get("allow")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(',')
        .map(|m| m.trim().to_ascii_uppercase())
        .filter(|m| !m.is_empty())
        .collect()
}

/// Every documented path answers a method it does not serve with `405` and
/// an `Allow` that lists exactly its documented methods (and `HEAD` with
/// `GET`). Action paths share their route with the item (`/v1/jobs/{id}`
/// serves `GET`, `DELETE` and the `POST` of `:cancel`), so before the fix
/// `OPTIONS /v1/jobs/1:cancel` listed `GET,HEAD,DELETE,POST`, `GET
/// /v1/jobs/1:cancel` reached the job handler (`400` on `id`), and `PUT
/// /v1/jobs/1` listed a `POST` that path does not serve.
#[tokio::test]
async fn allow_headers_list_the_documented_methods() {
    let mock = Mock::start(&[]).await;
    let server = Server::start(&Server::webhook_config(&mock.hook(), "", "")).await;
    let (st, doc) = common::get_json(&format!("{}/openapi.json", server.url)).await;
    assert_eq!(st, 200, "{doc}");
    let mut probed = 0;
    for (path, item) in doc["paths"].as_object().expect("paths") {
        let mut documented: BTreeSet<String> = item
            .as_object()
            .expect("a path item")
            .keys()
            .map(|m| m.to_ascii_uppercase())
            .collect();
        if documented.contains("GET") {
            documented.insert("HEAD".into());
        }
        let url = format!("{}{}", server.url, filled(path));
        let not_served = ["OPTIONS", "GET", "PUT", "PATCH", "DELETE"]
            .into_iter()
            .filter(|m| !documented.contains(*m));
        for method in not_served {
            let resp = client()
                .request(method.parse().expect("method"), &url)
                .send()
                .await
                .expect("request");
            assert_eq!(resp.status().as_u16(), 405, "{method} {url}");
            assert_eq!(allow_of(&resp), documented, "{method} {url}: Allow");
            let body: Value = resp.json().await.expect("a JSON error");
            assert_eq!(
                body["error"]["code"], "method_not_allowed",
                "{method} {url}"
            );
            probed += 1;
        }
    }
    assert!(probed > 100, "only {probed} probes");
    // The item's path without an action: `POST` still names the actions.
    let resp = client()
        .post(format!("{}/v1/jobs/1", server.url))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status().as_u16(), 404);
    let body: Value = resp.json().await.expect("a JSON error");
    assert_eq!(body["error"]["code"], "unknown_action", "{body}");

    // A protected node refuses a wrong key first (`401`), and the router's
    // method fallback still adds an `Allow`: it too must be the path's.
    let admin = "describe-admin-key-0123456789";
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = format!("sqlite://{}", dir.path().join("herald.db").display());
    let protected = Server::start_with_env(&store, dir, "", &[("HERALD_ADMIN_KEY", admin)]).await;
    for (key, status) in [("not-a-key-0123456789", 401), (admin, 405)] {
        for method in ["OPTIONS", "GET"] {
            let resp = client()
                .request(
                    method.parse().expect("method"),
                    format!("{}/v1/jobs/1:cancel", protected.url),
                )
                .bearer_auth(key)
                .send()
                .await
                .expect("request");
            assert_eq!(resp.status().as_u16(), status, "{method} with {key}");
            let allow = allow_of(&resp);
            assert!(
                allow.is_empty() || allow == BTreeSet::from(["POST".to_string()]),
                "{method} with {key}: Allow {allow:?}"
            );
            if status == 405 {
                assert_eq!(allow, BTreeSet::from(["POST".to_string()]));
            }
        }
    }
}
