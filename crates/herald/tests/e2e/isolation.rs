//! Isolation of the real binary, on both stores: every route of the API
//! (walked from `herald_server::ROUTES`, so none is missed) against no key,
//! a bad key, a revoked key, an expired key, a key without the scope,
//! another tenant's key and the right key; every refused request is followed
//! by a read-back, as the owner, of everything the owner has. Then a cluster
//! (a revoke through one node reaches the others within 2 s) and the CLI
//! (`herald keys` and `--key`).
//!
//! PostgreSQL cases skip without `initdb`/`postgres` unless
//! `HERALD_REQUIRE_PG=1`, where they fail.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::{BIN, Server, client, now_ms, pg_database, rfc3339, wait_for};
use herald_server::access::{Need, Verb};
use reqwest::Method;
use serde_json::{Value, json};

const ADMIN: &str = "isolation-admin-key-0123456789abcdef";
/// The tenant whose data the matrix attacks, and the tenant attacking it.
const OWNER: &str = "shop";
const OTHER: &str = "crm";
/// In every name, recipient and message of the owner's: no answer to the
/// other tenant may contain it.
const MARK: &str = "shopmark";
/// An id that exists nowhere.
const FAKE: &str = "987654321";
const SCOPES: [&str; 5] = ["read", "write", "campaign", "admin", "metrics"];

/// One answer, as it came.
#[derive(Debug)]
struct Answer {
    status: u16,
    www_authenticate: Option<String>,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    fn code(&self) -> Value {
        self.json()["error"]["code"].clone()
    }
}

/// A request of the matrix: method, concrete path, body with its type.
#[derive(Clone, Debug)]
struct Req {
    method: Method,
    path: String,
    body: Option<(&'static str, String)>,
}

fn req(method: Method, path: impl Into<String>) -> Req {
    Req {
        method,
        path: path.into(),
        body: None,
    }
}

fn json_req(method: Method, path: impl Into<String>, body: Value) -> Req {
    Req {
        body: Some(("application/json", body.to_string())),
        ..req(method, path)
    }
}

fn ndjson_req(path: impl Into<String>, lines: &[Value]) -> Req {
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    Req {
        body: Some(("application/x-ndjson", body)),
        ..req(Method::POST, path)
    }
}

async fn call(base: &str, key: Option<&str>, r: &Req) -> Answer {
    call_with(base, key, r, &[]).await
}

async fn call_with(base: &str, key: Option<&str>, r: &Req, headers: &[(&str, &str)]) -> Answer {
    let mut rb = client().request(r.method.clone(), format!("{base}{}", r.path));
    if let Some(k) = key {
        rb = rb.bearer_auth(k);
    }
    for (k, v) in headers {
        rb = rb.header(*k, *v);
    }
    if let Some((ct, b)) = &r.body {
        rb = rb.header("content-type", *ct).body(b.clone());
    }
    let resp = rb.send().await.unwrap();
    let status = resp.status().as_u16();
    let www_authenticate = resp
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = resp.text().await.unwrap();
    Answer {
        status,
        www_authenticate,
        text,
    }
}

/// `POST /v1/keys` with the admin key; the answer's JSON.
async fn create_key(base: &str, tenant: &str, scopes: &[&str], extra: Value) -> Value {
    let mut body = json!({"tenant": tenant, "scopes": scopes, "name": format!("{tenant}-{}", scopes.join("-"))});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let a = call(base, Some(ADMIN), &json_req(Method::POST, "/v1/keys", body)).await;
    assert_eq!(a.status, 201, "creating a key: {}", a.text);
    let v = a.json();
    assert!(v["key"].as_str().unwrap().starts_with("hrk_"), "{v}");
    v
}

fn secret(v: &Value) -> String {
    v["key"].as_str().unwrap().to_string()
}

/// Polls until `key` is refused with 401 on `base`, at most `within`.
async fn wait_refused(base: &str, key: &str, within: Duration) {
    let probe = req(Method::GET, "/v1/rules");
    let deadline = Instant::now() + within;
    loop {
        let a = call(base, Some(key), &probe).await;
        if a.status == 401 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the key was not refused within {within:?}: {} {}",
            a.status,
            a.text
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The keys and the owner's data the matrix works on.
struct Fixture {
    base: String,
    /// Owner keys holding exactly one scope.
    only: BTreeMap<&'static str, String>,
    /// Owner keys holding every scope but one.
    all_but: BTreeMap<&'static str, String>,
    owner_all: String,
    /// The other tenant's keys holding exactly one scope: the right scope
    /// for the route, only not the right tenant.
    other_only: BTreeMap<&'static str, String>,
    revoked: String,
    expired: String,
    /// The owner's read key with one character of its secret changed.
    bad: String,
    timer: i64,
    spare_timer: i64,
    fired_timer: i64,
    delivery: i64,
    audience: i64,
    rule: i64,
    spare_rule: i64,
    /// A task the planner planned for `rule`.
    task: i64,
    job: i64,
    victim_key: i64,
    spare_key: i64,
}

/// The owner's key that may do everything the read-back needs.
fn owner_read(f: &Fixture) -> &str {
    &f.owner_all
}

impl Fixture {
    async fn build(base: &str) -> Fixture {
        // First, so that it has expired by the time the matrix runs.
        let expired = create_key(
            base,
            OWNER,
            &SCOPES,
            json!({"name": "expires-soon", "expires_at": rfc3339(now_ms() + 2_000)}),
        )
        .await;
        let owner_all = secret(&create_key(base, OWNER, &SCOPES, json!({})).await);
        let mut only = BTreeMap::new();
        let mut all_but = BTreeMap::new();
        let mut other_only = BTreeMap::new();
        for s in SCOPES {
            other_only.insert(s, secret(&create_key(base, OTHER, &[s], json!({})).await));
            only.insert(s, secret(&create_key(base, OWNER, &[s], json!({})).await));
            let rest: Vec<&str> = SCOPES.iter().copied().filter(|x| *x != s).collect();
            all_but.insert(s, secret(&create_key(base, OWNER, &rest, json!({})).await));
        }
        let revoked = create_key(base, OWNER, &SCOPES, json!({"name": "revoked"})).await;
        let a = call(
            base,
            Some(ADMIN),
            &req(Method::DELETE, format!("/v1/keys/{}", revoked["id"])),
        )
        .await;
        assert_eq!(a.status, 200, "{}", a.text);
        assert!(a.json()["revoked_at"].is_string(), "{}", a.text);
        let victim_key = create_key(base, OWNER, &["read"], json!({"name": "victim"})).await;
        let spare_key = create_key(base, OWNER, &["read"], json!({"name": "spare"})).await;
        let read = only["read"].clone();
        // Same id, another secret: the lookup finds the key, the hash differs.
        let mut bad = read.clone();
        let last = bad.pop().unwrap();
        bad.push(if last == 'A' { 'B' } else { 'A' });

        let key = Some(owner_all.as_str());
        let timer = |fire_in: i64, idem: Option<&str>| {
            let mut b = json!({"delay_ms": fire_in, "channel": "log",
                "recipient": format!("{MARK}-r"), "message": {"text": MARK}});
            if let Some(k) = idem {
                b["idempotency_key"] = k.into();
            }
            json_req(Method::POST, "/v1/timers", b)
        };
        let created = |a: Answer| {
            assert_eq!(a.status, 201, "{}", a.text);
            a.json()["id"].as_i64().unwrap()
        };
        let t = created(call(base, key, &timer(3_600_000, Some("k-pending"))).await);
        let spare_timer = created(call(base, key, &timer(3_600_000, None)).await);
        let fired_timer = created(call(base, key, &timer(0, None)).await);
        let start_at = rfc3339(now_ms() + 86_400_000);
        for subject in ["coupon-42", "spare-subject"] {
            let a = call(
                base,
                key,
                &json_req(
                    Method::PUT,
                    format!("/v1/subjects/{subject}"),
                    json!({"start_at": start_at, "title": MARK}),
                ),
            )
            .await;
            assert_eq!(a.status, 201, "{}", a.text);
        }
        let a = call(
            base,
            key,
            &json_req(
                Method::POST,
                "/v1/templates",
                json!({"name": "iso-tpl", "locales": {"default": {"webhook": {"text": "{{ who }}"}}}}),
            ),
        )
        .await;
        assert_eq!(a.status, 201, "{}", a.text);
        let a = call(
            base,
            key,
            &json_req(Method::PUT, "/v1/calendars/iso-cal", calendar()),
        )
        .await;
        assert_eq!(a.status, 200, "{}", a.text);
        for user in ["alice-sub", "spare-sub"] {
            let a = call(
                base,
                key,
                &json_req(
                    Method::PUT,
                    format!("/v1/subscribers/{user}"),
                    json!({"locale": "en", "addresses": {"email": format!("{MARK}@example.com")}}),
                ),
            )
            .await;
            assert_eq!(a.status, 201, "{}", a.text);
        }
        for user in ["alice", "bob"] {
            let a = call(
                base,
                key,
                &json_req(
                    Method::POST,
                    "/v1/reminders",
                    json!({"user_id": user, "subject_id": "coupon-42", "channel_type": "app", "lead_minutes": 5}),
                ),
            )
            .await;
            assert_eq!(a.status, 201, "{}", a.text);
        }
        let audience = created(
            call(
                base,
                key,
                &ndjson_req(
                    format!("/v1/audiences?name={MARK}"),
                    &[json!({"recipient": format!("{MARK}-1")})],
                ),
            )
            .await,
        );
        let rule_body = json!({"name": format!("{MARK}-rule"),
            "schedule": {"type": "at", "at": start_at},
            "audience": {"users": [format!("{MARK}-u1")]},
            "channel": "log", "message": {"text": MARK}});
        let rule = created(
            call(
                base,
                key,
                &json_req(Method::POST, "/v1/rules", rule_body.clone()),
            )
            .await,
        );
        let spare_rule =
            created(call(base, key, &json_req(Method::POST, "/v1/rules", rule_body)).await);
        let job = created(
            call(
                base,
                key,
                &json_req(
                    Method::POST,
                    "/v1/jobs",
                    json!({"users": [format!("{MARK}-u1"), format!("{MARK}-u2")],
                        "channel": "log", "message": {"text": MARK}}),
                ),
            )
            .await,
        );
        // The fired timer's delivery, for recall.
        wait_for(
            "the fired timer's delivery",
            Duration::from_secs(20),
            || {
                let path = format!("/v1/timers/{fired_timer}/deliveries");
                let key = owner_all.clone();
                let base = base.to_string();
                async move {
                    let a = call(&base, Some(&key), &req(Method::GET, path)).await;
                    a.json()["deliveries"][0]["id"].as_i64().is_some()
                }
            },
        )
        .await;
        let a = call(
            base,
            key,
            &req(Method::GET, format!("/v1/timers/{fired_timer}/deliveries")),
        )
        .await;
        let delivery = a.json()["deliveries"][0]["id"].as_i64().unwrap();
        wait_for("the owner's rule planned", Duration::from_secs(20), || {
            let key = owner_all.clone();
            let base = base.to_string();
            async move {
                let path = format!("/v1/rules/{rule}/tasks");
                let a = call(&base, Some(&key), &req(Method::GET, path)).await;
                a.json()["tasks"][0]["id"].as_i64().is_some()
            }
        })
        .await;
        let a = call(
            base,
            key,
            &req(Method::GET, format!("/v1/rules/{rule}/tasks")),
        )
        .await;
        let task = a.json()["tasks"][0]["id"].as_i64().unwrap();
        wait_for("the owner's job to end", Duration::from_secs(20), || {
            let key = owner_all.clone();
            let base = base.to_string();
            async move {
                let a = call(
                    &base,
                    Some(&key),
                    &req(Method::GET, format!("/v1/jobs/{job}")),
                )
                .await;
                a.json()["state"] == "done"
            }
        })
        .await;
        let f = Fixture {
            base: base.to_string(),
            only,
            all_but,
            owner_all,
            other_only,
            revoked: secret(&revoked),
            expired: secret(&expired),
            bad,
            timer: t,
            spare_timer,
            fired_timer,
            delivery,
            audience,
            rule,
            spare_rule,
            task,
            job,
            victim_key: victim_key["id"].as_i64().unwrap(),
            spare_key: spare_key["id"].as_i64().unwrap(),
        };
        // Both refused before the matrix starts (a node caches a key for
        // at most a second).
        wait_refused(base, &f.revoked, Duration::from_secs(3)).await;
        wait_refused(base, &f.expired, Duration::from_secs(6)).await;
        f
    }

    /// Everything the owner has, as the owner reads it.
    async fn snapshot(&self) -> BTreeMap<String, String> {
        let key = owner_read(self);
        let mut paths = vec![
            format!("/v1/timers/{}", self.timer),
            format!("/v1/timers/{}", self.spare_timer),
            format!("/v1/timers/{}/deliveries", self.fired_timer),
            "/v1/subjects/coupon-42".to_string(),
            "/v1/subjects/spare-subject".to_string(),
            "/v1/users/alice/reminders".to_string(),
            "/v1/users/bob/reminders".to_string(),
            format!("/v1/audiences/{}", self.audience),
            "/v1/rules".to_string(),
            format!("/v1/rules/{}/versions", self.rule),
            format!("/v1/rules/{}/tasks", self.rule),
            format!("/v1/rules/{}/tasks", self.spare_rule),
            "/v1/jobs".to_string(),
            format!("/v1/jobs/{}/segments", self.job),
            format!("/v1/jobs/{}/sends", self.job),
        ];
        paths.sort();
        let mut out = BTreeMap::new();
        for p in paths {
            let a = call(&self.base, Some(key), &req(Method::GET, p.clone())).await;
            out.insert(p, format!("{} {}", a.status, normalize(&a.text)));
        }
        let a = call(&self.base, Some(ADMIN), &req(Method::GET, "/v1/keys")).await;
        out.insert("/v1/keys".into(), format!("{} {}", a.status, a.text));
        out
    }

    /// A snapshot once the owner's data has stopped moving (after a request
    /// that was meant to change it).
    async fn settled(&self) -> BTreeMap<String, String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut last = self.snapshot().await;
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = self.snapshot().await;
            if now == last {
                return now;
            }
            assert!(Instant::now() < deadline, "the owner's data kept changing");
            last = now;
        }
    }
}

/// Answers read at different moments differ in the figures a node samples
/// as it answers (job rates); those are not state.
fn normalize(text: &str) -> String {
    let Ok(mut v) = serde_json::from_str::<Value>(text) else {
        return text.to_string();
    };
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                // Sampled figures, and when a subject's plan was counted
                // (at each request, for a small subject).
                for k in ["rate_per_sec", "eta_secs", "early_start_counted_at"] {
                    m.remove(k);
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v.to_string()
}

/// Fails naming what `what` changed in the owner's read-back.
fn unchanged(now: &BTreeMap<String, String>, before: &BTreeMap<String, String>, what: &str) {
    let changed: Vec<String> = before
        .iter()
        .filter(|(path, text)| now.get(*path) != Some(*text))
        .map(|(path, text)| format!("{path}\n  before: {text}\n  after:  {:?}", now.get(path)))
        .collect();
    assert!(
        changed.is_empty(),
        "{what} changed the owner's data:\n{}",
        changed.join("\n")
    );
}

/// What another tenant's key gets for the owner's resource.
enum Other {
    /// Not a tenant's resource (health, the node's views, keys): not asked.
    NotApplicable,
    /// The same answer, byte for byte, as for `missing` (which names
    /// `FAKE`-like ids that exist nowhere), once the ids are swapped back.
    Hidden {
        /// What the other tenant sends; the case's target if `None`.
        req: Option<Req>,
        missing: Req,
        swap: (String, String),
        status: u16,
    },
    /// The other tenant's own answer to `req`: this status, and, if given,
    /// this text in it.
    Own {
        req: Req,
        status: u16,
        contains: Option<&'static str>,
    },
}

struct Case {
    verb: &'static str,
    pattern: &'static str,
    /// The request the refused keys send (at the owner's data).
    target: Req,
    /// What the right key sends, and gets.
    right: Req,
    right_status: u16,
    other: Other,
}

/// The owner's calendar: its description carries the mark.
fn calendar() -> Value {
    json!({"description": MARK, "time_zone": "Asia/Shanghai",
        "working_weekdays": ["mon", "tue", "wed", "thu", "fri"],
        "years": {"2030": {"holidays": ["2030-01-01"]}}})
}

/// A preview of a weekday rule on calendar `name`.
fn on_calendar(name: &str) -> Value {
    json!({"schedule": {"type": "cron", "cron": "0 9 * * 1-5", "timezone": "Asia/Shanghai",
        "calendar": name}, "count": 2, "from": "2030-01-01T00:00:00Z"})
}

fn hidden(missing: Req, fake: &str, real: impl ToString, status: u16) -> Other {
    Other::Hidden {
        req: None,
        missing,
        swap: (fake.to_string(), real.to_string()),
        status,
    }
}

/// Like [`hidden`], the other tenant sending `req` (which names the
/// owner's data in its body) rather than the case's target.
fn hidden_ref(req: Req, missing: Req, fake: &str, real: impl ToString, status: u16) -> Other {
    match hidden(missing, fake, real, status) {
        Other::Hidden {
            missing,
            swap,
            status,
            ..
        } => Other::Hidden {
            req: Some(req),
            missing,
            swap,
            status,
        },
        other => other,
    }
}

fn case(
    verb: &'static str,
    pattern: &'static str,
    target: Req,
    right: Option<Req>,
    right_status: u16,
    other: Other,
) -> Case {
    Case {
        verb,
        pattern,
        right: right.unwrap_or_else(|| target.clone()),
        target,
        right_status,
        other,
    }
}

/// Every route, with what each kind of caller must get. Subjects are
/// created by the other tenant only in the last case, so the cases before
/// it see the other tenant without them.
fn cases(f: &Fixture) -> Vec<Case> {
    use Method as M;
    let missing_subject = "no-such-subject";
    let later = rfc3339(now_ms() + 86_400_000);
    let timer = |idem: &str| json!({"delay_ms": 3_600_000, "channel": "log", "recipient": "r", "message": {}, "idempotency_key": idem});
    let reminder = |user: &str, subject: &str| json!({"user_id": user, "subject_id": subject, "channel_type": "app", "lead_minutes": 5});
    let rule = |audience: Value| {
        json!({"name": format!("{MARK}-rule-2"), "schedule": {"type": "at", "at": later},
            "audience": audience, "channel": "log", "message": {"text": MARK}})
    };
    let job =
        |audience_id: Value| json!({"audience_id": audience_id, "channel": "log", "message": {}});
    let xml = Req {
        body: Some((
            "text/xml",
            "<xml><MsgType>event</MsgType><Event>TEMPLATESENDJOBFINISH</Event><MsgID>1</MsgID><Status>success</Status></xml>".into(),
        )),
        ..req(M::POST, "/v1/channels/log/callback")
    };
    let (t, rl, j, au, d) = (f.timer, f.rule, f.job, f.audience, f.delivery);
    vec![
        case(
            "POST",
            "/v1/timers",
            json_req(M::POST, "/v1/timers", timer("k-new")),
            None,
            201,
            // The owner's idempotency key names nothing of the other tenant's: a new timer.
            Other::Own {
                req: json_req(M::POST, "/v1/timers", timer("k-pending")),
                status: 201,
                contains: None,
            },
        ),
        case(
            "POST",
            "/v1/timers:bulk",
            ndjson_req("/v1/timers:bulk", &[timer("k-bulk")]),
            None,
            200,
            // The owner's key from the case above: new for the other tenant too.
            Other::Own {
                req: ndjson_req("/v1/timers:bulk", &[timer("k-new")]),
                status: 200,
                contains: Some("\"status\":201"),
            },
        ),
        case(
            "GET",
            "/v1/timers/{id}",
            req(M::GET, format!("/v1/timers/{t}")),
            None,
            200,
            hidden(req(M::GET, format!("/v1/timers/{FAKE}")), FAKE, t, 404),
        ),
        // Before the DELETE case, which cancels the spare timer.
        case(
            "PATCH",
            "/v1/timers/{id}",
            json_req(
                M::PATCH,
                format!("/v1/timers/{t}"),
                json!({"message": {"text": "patched"}}),
            ),
            Some(json_req(
                M::PATCH,
                format!("/v1/timers/{}", f.spare_timer),
                json!({"message": {"text": "patched"}}),
            )),
            200,
            hidden_ref(
                json_req(
                    M::PATCH,
                    format!("/v1/timers/{t}"),
                    json!({"message": {"text": "patched"}}),
                ),
                json_req(
                    M::PATCH,
                    format!("/v1/timers/{FAKE}"),
                    json!({"message": {"text": "patched"}}),
                ),
                FAKE,
                t,
                404,
            ),
        ),
        // The owner's timer is pending: it cannot be retried.
        case(
            "POST",
            "/v1/timers/{id}",
            req(M::POST, format!("/v1/timers/{t}:retry")),
            None,
            409,
            hidden(
                req(M::POST, format!("/v1/timers/{FAKE}:retry")),
                FAKE,
                t,
                404,
            ),
        ),
        // Each key searches its own tenant's timers.
        case(
            "GET",
            "/v1/timers",
            req(M::GET, "/v1/timers?idempotency_key=k-pending"),
            None,
            200,
            Other::Own {
                // The owner has a delivered timer; the other tenant none.
                req: req(M::GET, "/v1/timers?state=done"),
                status: 200,
                contains: Some("\"timers\":[]"),
            },
        ),
        case(
            "POST",
            "/v1/timers:retry",
            json_req(M::POST, "/v1/timers:retry", json!({"channel": "log"})),
            None,
            200,
            Other::Own {
                req: json_req(M::POST, "/v1/timers:retry", json!({"channel": "log"})),
                status: 200,
                contains: Some("\"retried\":0"),
            },
        ),
        case(
            "GET",
            "/v1/dead-letters",
            req(M::GET, "/v1/dead-letters"),
            None,
            200,
            Other::Own {
                req: req(M::GET, "/v1/dead-letters"),
                status: 200,
                contains: Some("\"groups\":[]"),
            },
        ),
        case(
            "DELETE",
            "/v1/timers/{id}",
            req(M::DELETE, format!("/v1/timers/{t}")),
            Some(req(M::DELETE, format!("/v1/timers/{}", f.spare_timer))),
            200,
            hidden(req(M::DELETE, format!("/v1/timers/{FAKE}")), FAKE, t, 404),
        ),
        case(
            "GET",
            "/v1/timers/{id}/deliveries",
            req(M::GET, format!("/v1/timers/{}/deliveries", f.fired_timer)),
            None,
            200,
            hidden(
                req(M::GET, format!("/v1/timers/{FAKE}/deliveries")),
                FAKE,
                f.fired_timer,
                404,
            ),
        ),
        // Each key lists its own tenant's subjects: the other tenant has none.
        case(
            "GET",
            "/v1/subjects",
            req(M::GET, "/v1/subjects"),
            None,
            200,
            Other::Own {
                req: req(M::GET, "/v1/subjects"),
                status: 200,
                contains: Some("\"subjects\":[]"),
            },
        ),
        case(
            "GET",
            "/v1/subjects/{subject_id}",
            req(M::GET, "/v1/subjects/coupon-42"),
            None,
            200,
            hidden(
                req(M::GET, format!("/v1/subjects/{missing_subject}")),
                missing_subject,
                "coupon-42",
                404,
            ),
        ),
        case(
            "DELETE",
            "/v1/subjects/{subject_id}",
            req(M::DELETE, "/v1/subjects/coupon-42"),
            Some(req(M::DELETE, "/v1/subjects/spare-subject")),
            200,
            hidden(
                req(M::DELETE, format!("/v1/subjects/{missing_subject}")),
                missing_subject,
                "coupon-42",
                404,
            ),
        ),
        case(
            "POST",
            "/v1/reminders",
            json_req(M::POST, "/v1/reminders", reminder("carol", "coupon-42")),
            None,
            201,
            // The owner's subject does not exist for the other tenant.
            hidden(
                json_req(M::POST, "/v1/reminders", reminder("carol", missing_subject)),
                missing_subject,
                "coupon-42",
                404,
            ),
        ),
        case(
            "POST",
            "/v1/reminders:bulk",
            ndjson_req("/v1/reminders:bulk", &[reminder("dave", "coupon-42")]),
            None,
            200,
            Other::Own {
                req: ndjson_req("/v1/reminders:bulk", &[reminder("dave", "coupon-42")]),
                status: 200,
                contains: Some("\"status\":404"),
            },
        ),
        case(
            "DELETE",
            "/v1/reminders/{user_id}/{subject_id}",
            req(M::DELETE, "/v1/reminders/alice/coupon-42"),
            Some(req(M::DELETE, "/v1/reminders/bob/coupon-42")),
            200,
            hidden(
                req(M::DELETE, format!("/v1/reminders/alice/{missing_subject}")),
                missing_subject,
                "coupon-42",
                404,
            ),
        ),
        case(
            "GET",
            "/v1/users/{user_id}/reminders",
            req(M::GET, "/v1/users/alice/reminders"),
            None,
            200,
            hidden(
                req(M::GET, "/v1/users/nobody-here/reminders"),
                "nobody-here",
                "alice",
                200,
            ),
        ),
        case(
            "GET",
            "/v1/users/{user_id}",
            req(M::GET, "/v1/users/alice"),
            None,
            200,
            hidden(
                req(M::GET, "/v1/users/nobody-here"),
                "nobody-here",
                "alice",
                200,
            ),
        ),
        // Templates: the owner's are not there for the other tenant, which
        // may use the same names for its own.
        case(
            "GET",
            "/v1/templates",
            req(M::GET, "/v1/templates"),
            None,
            200,
            Other::Own {
                req: req(M::GET, "/v1/templates"),
                status: 200,
                contains: Some("\"templates\":[]"),
            },
        ),
        case(
            "GET",
            "/v1/templates/{name}",
            req(M::GET, "/v1/templates/iso-tpl"),
            None,
            200,
            hidden(
                req(M::GET, "/v1/templates/nobody-tpl"),
                "nobody-tpl",
                "iso-tpl",
                404,
            ),
        ),
        case(
            "PUT",
            "/v1/templates/{name}",
            json_req(
                M::PUT,
                "/v1/templates/iso-tpl",
                json!({"locales": {"default": {"webhook": {"text": "{{ who }}!"}}}}),
            ),
            None,
            200,
            hidden(
                json_req(
                    M::PUT,
                    "/v1/templates/nobody-tpl",
                    json!({"locales": {"default": {"webhook": {"text": "{{ who }}!"}}}}),
                ),
                "nobody-tpl",
                "iso-tpl",
                404,
            ),
        ),
        case(
            "POST",
            "/v1/templates/{name}",
            json_req(
                M::POST,
                "/v1/templates/iso-tpl:preview",
                json!({"data": {"who": "x"}}),
            ),
            None,
            200,
            hidden(
                json_req(
                    M::POST,
                    "/v1/templates/nobody-tpl:preview",
                    json!({"data": {"who": "x"}}),
                ),
                "nobody-tpl",
                "iso-tpl",
                404,
            ),
        ),
        case(
            "POST",
            "/v1/templates",
            json_req(
                M::POST,
                "/v1/templates",
                json!({"name": "iso-new", "locales": {"default": {"webhook": {"text": "hi"}}}}),
            ),
            None,
            201,
            Other::Own {
                req: json_req(
                    M::POST,
                    "/v1/templates",
                    json!({"name": "iso-tpl", "locales": {"default": {"webhook": {"text": "hi"}}}}),
                ),
                status: 201,
                contains: None,
            },
        ),
        // Subscribers: the owner's are not there for the other tenant, whose
        // own directory starts empty; its PUT of the same user id creates
        // its own entry (201), last, so the cases before see it without.
        case(
            "GET",
            "/v1/subscribers/{user_id}",
            req(M::GET, "/v1/subscribers/alice-sub"),
            None,
            200,
            hidden(
                req(M::GET, "/v1/subscribers/nobody-sub"),
                "nobody-sub",
                "alice-sub",
                404,
            ),
        ),
        case(
            "PATCH",
            "/v1/subscribers/{user_id}",
            json_req(
                M::PATCH,
                "/v1/subscribers/alice-sub",
                json!({"locale": "fr"}),
            ),
            None,
            200,
            hidden(
                json_req(
                    M::PATCH,
                    "/v1/subscribers/nobody-sub",
                    json!({"locale": "fr"}),
                ),
                "nobody-sub",
                "alice-sub",
                404,
            ),
        ),
        case(
            "DELETE",
            "/v1/subscribers/{user_id}",
            req(M::DELETE, "/v1/subscribers/alice-sub"),
            Some(req(M::DELETE, "/v1/subscribers/spare-sub")),
            200,
            hidden(
                req(M::DELETE, "/v1/subscribers/nobody-sub"),
                "nobody-sub",
                "alice-sub",
                404,
            ),
        ),
        // Grants: the other tenant sees none of the owner's user's; this
        // node has no mini-program channel, so a recording is refused
        // (naming `channel`) for either.
        case(
            "GET",
            "/v1/subscribers/{user_id}/grants",
            req(M::GET, "/v1/subscribers/alice-sub/grants"),
            None,
            200,
            Other::Own {
                req: req(M::GET, "/v1/subscribers/alice-sub/grants"),
                status: 200,
                contains: Some("\"grants\":[]"),
            },
        ),
        case(
            "POST",
            "/v1/subscribers/{user_id}/grants",
            json_req(
                M::POST,
                "/v1/subscribers/alice-sub/grants",
                json!({"key": "k", "channel": "log", "grants": [{"template_id": "T"}]}),
            ),
            None,
            400,
            Other::Own {
                req: json_req(
                    M::POST,
                    "/v1/subscribers/alice-sub/grants",
                    json!({"key": "k", "channel": "log", "grants": [{"template_id": "T"}]}),
                ),
                status: 400,
                contains: Some("\"field\":\"channel\""),
            },
        ),
        case(
            "GET",
            "/v1/subscribers",
            req(M::GET, "/v1/subscribers"),
            None,
            200,
            Other::Own {
                req: req(M::GET, "/v1/subscribers"),
                status: 200,
                contains: Some("\"subscribers\":[]"),
            },
        ),
        case(
            "POST",
            "/v1/subscribers:bulk",
            ndjson_req(
                "/v1/subscribers:bulk",
                &[json!({"user_id": "bulk-sub", "locale": "en"})],
            ),
            None,
            200,
            Other::Own {
                req: ndjson_req(
                    "/v1/subscribers:bulk",
                    &[json!({"user_id": "bulk-sub", "locale": "en"})],
                ),
                status: 200,
                contains: Some("\"status\":201"),
            },
        ),
        case(
            "PUT",
            "/v1/subscribers/{user_id}",
            json_req(M::PUT, "/v1/subscribers/alice-sub", json!({"locale": "de"})),
            None,
            200,
            Other::Own {
                req: json_req(M::PUT, "/v1/subscribers/alice-sub", json!({"locale": "de"})),
                status: 201,
                contains: None,
            },
        ),
        case(
            "POST",
            "/v1/audiences",
            ndjson_req("/v1/audiences", &[json!({"recipient": "x"})]),
            None,
            201,
            Other::Own {
                req: ndjson_req("/v1/audiences", &[json!({"recipient": "x"})]),
                status: 201,
                contains: None,
            },
        ),
        case(
            "GET",
            "/v1/audiences/{id}",
            req(M::GET, format!("/v1/audiences/{au}")),
            None,
            200,
            hidden(req(M::GET, format!("/v1/audiences/{FAKE}")), FAKE, au, 404),
        ),
        case(
            "POST",
            "/v1/rules",
            json_req(M::POST, "/v1/rules", rule(json!({"users": ["u1"]}))),
            None,
            201,
            // The owner's audience does not exist for the other tenant.
            hidden_ref(
                json_req(M::POST, "/v1/rules", rule(json!({"audience_id": au}))),
                json_req(
                    M::POST,
                    "/v1/rules",
                    rule(json!({"audience_id": FAKE.parse::<i64>().unwrap()})),
                ),
                FAKE,
                au,
                400,
            ),
        ),
        case(
            "GET",
            "/v1/rules",
            req(M::GET, "/v1/rules"),
            None,
            200,
            Other::Own {
                req: req(M::GET, "/v1/rules"),
                status: 200,
                contains: None,
            },
        ),
        case(
            "GET",
            "/v1/rules/{id}",
            req(M::GET, format!("/v1/rules/{rl}")),
            None,
            200,
            hidden(req(M::GET, format!("/v1/rules/{FAKE}")), FAKE, rl, 404),
        ),
        case(
            "PUT",
            "/v1/rules/{id}",
            json_req(
                M::PUT,
                format!("/v1/rules/{rl}"),
                rule(json!({"users": ["u1"]})),
            ),
            None,
            200,
            hidden(
                json_req(
                    M::PUT,
                    format!("/v1/rules/{FAKE}"),
                    rule(json!({"users": ["u1"]})),
                ),
                FAKE,
                rl,
                404,
            ),
        ),
        case(
            "POST",
            "/v1/rules/{id}",
            req(M::POST, format!("/v1/rules/{rl}:disable")),
            Some(req(M::POST, format!("/v1/rules/{}:disable", f.spare_rule))),
            200,
            hidden(
                req(M::POST, format!("/v1/rules/{FAKE}:disable")),
                FAKE,
                rl,
                404,
            ),
        ),
        case(
            "GET",
            "/v1/rules/{id}/versions",
            req(M::GET, format!("/v1/rules/{rl}/versions")),
            None,
            200,
            hidden(
                req(M::GET, format!("/v1/rules/{FAKE}/versions")),
                FAKE,
                rl,
                404,
            ),
        ),
        case(
            "GET",
            "/v1/rules/{id}/tasks",
            req(M::GET, format!("/v1/rules/{rl}/tasks")),
            None,
            200,
            hidden(
                req(M::GET, format!("/v1/rules/{FAKE}/tasks")),
                FAKE,
                rl,
                404,
            ),
        ),
        // Cancelling is idempotent: the right key gets 200 each time.
        case(
            "POST",
            "/v1/rules/{id}/tasks/{task_id}",
            req(M::POST, format!("/v1/rules/{rl}/tasks/{}:cancel", f.task)),
            None,
            200,
            hidden(
                req(M::POST, format!("/v1/rules/{FAKE}/tasks/{}:cancel", f.task)),
                FAKE,
                rl,
                404,
            ),
        ),
        case(
            "POST",
            "/v1/jobs",
            json_req(
                M::POST,
                "/v1/jobs",
                json!({"users": ["u1"], "channel": "log", "message": {}}),
            ),
            None,
            201,
            hidden_ref(
                json_req(M::POST, "/v1/jobs", job(json!(au))),
                json_req(
                    M::POST,
                    "/v1/jobs",
                    job(json!(FAKE.parse::<i64>().unwrap())),
                ),
                FAKE,
                au,
                400,
            ),
        ),
        case(
            "GET",
            "/v1/jobs",
            req(M::GET, "/v1/jobs"),
            None,
            200,
            Other::Own {
                req: req(M::GET, "/v1/jobs"),
                status: 200,
                contains: None,
            },
        ),
        case(
            "GET",
            "/v1/jobs/{id}",
            req(M::GET, format!("/v1/jobs/{j}")),
            None,
            200,
            hidden(req(M::GET, format!("/v1/jobs/{FAKE}")), FAKE, j, 404),
        ),
        // The job has ended: cancelling returns it as it is.
        case(
            "POST",
            "/v1/jobs/{id}",
            req(M::POST, format!("/v1/jobs/{j}:cancel")),
            None,
            200,
            hidden(
                req(M::POST, format!("/v1/jobs/{FAKE}:cancel")),
                FAKE,
                j,
                404,
            ),
        ),
        case(
            "GET",
            "/v1/jobs/{id}/segments",
            req(M::GET, format!("/v1/jobs/{j}/segments")),
            None,
            200,
            hidden(
                req(M::GET, format!("/v1/jobs/{FAKE}/segments")),
                FAKE,
                j,
                404,
            ),
        ),
        case(
            "GET",
            "/v1/jobs/{id}/sends",
            req(M::GET, format!("/v1/jobs/{j}/sends")),
            None,
            200,
            hidden(req(M::GET, format!("/v1/jobs/{FAKE}/sends")), FAKE, j, 404),
        ),
        case(
            "GET",
            "/v1/jobs/{id}/failures",
            req(M::GET, format!("/v1/jobs/{j}/failures")),
            None,
            200,
            hidden(
                req(M::GET, format!("/v1/jobs/{FAKE}/failures")),
                FAKE,
                j,
                404,
            ),
        ),
        case(
            "GET",
            "/v1/channels",
            req(M::GET, "/v1/channels"),
            None,
            200,
            Other::NotApplicable,
        ),
        // Resuming a channel that is not paused changes nothing.
        case(
            "POST",
            "/v1/channels/{name}",
            req(M::POST, "/v1/channels/log:resume"),
            None,
            200,
            Other::NotApplicable,
        ),
        // A preview reads no tenant's data but the calendar it names: the
        // owner's is not there for the other tenant.
        case(
            "POST",
            "/v1/schedules:preview",
            json_req(M::POST, "/v1/schedules:preview", on_calendar("iso-cal")),
            None,
            200,
            hidden(
                json_req(M::POST, "/v1/schedules:preview", on_calendar("nobody-cal")),
                "nobody-cal",
                "iso-cal",
                400,
            ),
        ),
        // Calendars: the owner's are not there for the other tenant, which
        // sees the built-in ones only, and may store the same names.
        case(
            "GET",
            "/v1/calendars",
            req(M::GET, "/v1/calendars"),
            None,
            200,
            Other::Own {
                req: req(M::GET, "/v1/calendars"),
                status: 200,
                contains: Some("\"builtin\":true"),
            },
        ),
        case(
            "GET",
            "/v1/calendars/{name}",
            req(M::GET, "/v1/calendars/iso-cal"),
            None,
            200,
            hidden(
                req(M::GET, "/v1/calendars/nobody-cal"),
                "nobody-cal",
                "iso-cal",
                404,
            ),
        ),
        case(
            "PUT",
            "/v1/calendars/{name}",
            json_req(M::PUT, "/v1/calendars/iso-cal", calendar()),
            None,
            200,
            Other::Own {
                req: json_req(
                    M::PUT,
                    "/v1/calendars/iso-cal",
                    json!({"time_zone": "UTC", "working_weekdays": ["sat"]}),
                ),
                status: 200,
                contains: None,
            },
        ),
        case(
            "GET",
            "/v1/audiences",
            req(M::GET, "/v1/audiences"),
            None,
            200,
            Other::Own {
                req: req(M::GET, "/v1/audiences"),
                status: 200,
                contains: None,
            },
        ),
        // The log channel takes no provider callbacks, nor their handshake.
        case(
            "GET",
            "/v1/channels/{name}/callback",
            req(
                M::GET,
                "/v1/channels/log/callback?signature=0&timestamp=1&nonce=n&echostr=e",
            ),
            None,
            400,
            Other::NotApplicable,
        ),
        case(
            "POST",
            "/v1/channels/{name}/callback",
            xml,
            None,
            400,
            Other::NotApplicable,
        ),
        // A log delivery cannot be recalled; another tenant's does not exist
        // (a key with the admin scope acts for its own tenant unless it
        // names another with X-Herald-Tenant).
        case(
            "POST",
            "/v1/deliveries/{id}",
            req(M::POST, format!("/v1/deliveries/{d}:recall")),
            None,
            409,
            hidden(
                req(M::POST, format!("/v1/deliveries/{FAKE}:recall")),
                FAKE,
                d,
                404,
            ),
        ),
        // A receipt names a send by id: another tenant's does not exist.
        case(
            "POST",
            "/v1/receipts",
            json_req(
                M::POST,
                "/v1/receipts",
                json!({"delivery_id": d, "event": "read"}),
            ),
            None,
            200,
            hidden_ref(
                json_req(
                    M::POST,
                    "/v1/receipts",
                    json!({"delivery_id": d, "event": "read"}),
                ),
                json_req(
                    M::POST,
                    "/v1/receipts",
                    json!({"delivery_id": FAKE.parse::<i64>().unwrap_or_default(), "event": "read"}),
                ),
                FAKE,
                d,
                404,
            ),
        ),
        case(
            "GET",
            "/v1/stats",
            req(M::GET, "/v1/stats"),
            None,
            200,
            Other::NotApplicable,
        ),
        case(
            "GET",
            "/v1/cluster",
            req(M::GET, "/v1/cluster"),
            None,
            200,
            Other::NotApplicable,
        ),
        // Each key sees its own tenant's figures.
        case(
            "GET",
            "/v1/overview",
            req(M::GET, "/v1/overview"),
            None,
            200,
            Other::Own {
                req: req(M::GET, "/v1/overview"),
                status: 200,
                contains: Some("\"tenant\":\"crm\""),
            },
        ),
        // Each key counts its own tenant's timers.
        case(
            "GET",
            "/v1/forecast",
            req(M::GET, "/v1/forecast"),
            None,
            200,
            Other::Own {
                req: req(M::GET, "/v1/forecast"),
                status: 200,
                contains: Some("\"tenant\":\"crm\""),
            },
        ),
        case(
            "GET",
            "/healthz",
            req(M::GET, "/healthz"),
            None,
            200,
            Other::NotApplicable,
        ),
        case(
            "GET",
            "/readyz",
            req(M::GET, "/readyz"),
            None,
            200,
            Other::NotApplicable,
        ),
        case(
            "GET",
            "/openapi.json",
            req(M::GET, "/openapi.json"),
            None,
            200,
            Other::NotApplicable,
        ),
        case(
            "GET",
            "/docs",
            req(M::GET, "/docs"),
            None,
            200,
            Other::NotApplicable,
        ),
        case(
            "GET",
            "/metrics",
            req(M::GET, "/metrics"),
            None,
            200,
            Other::NotApplicable,
        ),
        case(
            "POST",
            "/v1/keys",
            json_req(
                M::POST,
                "/v1/keys",
                json!({"tenant": OWNER, "scopes": ["read"], "name": "made-in-matrix"}),
            ),
            None,
            201,
            Other::NotApplicable,
        ),
        case(
            "GET",
            "/v1/keys",
            req(M::GET, "/v1/keys"),
            None,
            200,
            Other::NotApplicable,
        ),
        case(
            "DELETE",
            "/v1/keys/{id}",
            req(M::DELETE, format!("/v1/keys/{}", f.victim_key)),
            Some(req(M::DELETE, format!("/v1/keys/{}", f.spare_key))),
            200,
            Other::NotApplicable,
        ),
        case(
            "GET",
            "/v1/audit",
            req(M::GET, "/v1/audit"),
            None,
            200,
            Other::Own {
                req: req(M::GET, "/v1/audit"),
                status: 200,
                contains: None,
            },
        ),
        // Near the end, as they remove what the cases before read. The job
        // has ended, and no job or rule names the audience.
        case(
            "DELETE",
            "/v1/jobs/{id}",
            req(M::DELETE, format!("/v1/jobs/{j}")),
            None,
            200,
            hidden(req(M::DELETE, format!("/v1/jobs/{FAKE}")), FAKE, j, 404),
        ),
        case(
            "DELETE",
            "/v1/audiences/{id}",
            req(M::DELETE, format!("/v1/audiences/{au}")),
            None,
            200,
            hidden(
                req(M::DELETE, format!("/v1/audiences/{FAKE}")),
                FAKE,
                au,
                404,
            ),
        ),
        case(
            "GET",
            "/v1/reports",
            req(M::GET, "/v1/reports?group_by=channel,outcome,job"),
            None,
            200,
            Other::Own {
                req: req(M::GET, "/v1/reports?group_by=channel,outcome,job"),
                status: 200,
                contains: None,
            },
        ),
        // The file the node started with, unchanged: nothing is applied.
        case(
            "POST",
            "/v1/admin:reload",
            req(M::POST, "/v1/admin:reload"),
            None,
            200,
            Other::NotApplicable,
        ),
        // Last: gives the other tenant a subject of the same id, which must
        // leave the owner's alone.
        case(
            "PUT",
            "/v1/subjects/{subject_id}",
            json_req(
                M::PUT,
                "/v1/subjects/coupon-42",
                json!({"start_at": later, "title": MARK}),
            ),
            None,
            200,
            Other::Own {
                req: json_req(
                    M::PUT,
                    "/v1/subjects/coupon-42",
                    json!({"start_at": later, "title": "theirs"}),
                ),
                status: 201,
                contains: None,
            },
        ),
    ]
}

fn verb_name(v: Verb) -> &'static str {
    v.as_str()
}

/// The whole matrix on the server at `base`.
async fn matrix(base: &str) {
    let started = Instant::now();
    let f = Fixture::build(base).await;
    let cases = cases(&f);
    // Every route of the table has a case, and no case names a route the
    // table lacks.
    let table: BTreeMap<(&str, &str), Need> = herald_server::ROUTES
        .iter()
        .map(|p| ((verb_name(p.verb), p.path), p.need))
        .collect();
    let covered: BTreeSet<(&str, &str)> = cases.iter().map(|c| (c.verb, c.pattern)).collect();
    assert_eq!(covered.len(), cases.len(), "a route has two cases");
    assert_eq!(
        covered,
        table.keys().copied().collect::<BTreeSet<_>>(),
        "the cases and the route table differ"
    );

    let mut baseline = f.settled().await;
    // Before the job's cases (one deletes it); the resend is a new job.
    resend_unread(&f, base, &baseline).await;
    baseline = f.settled().await;
    let mut refused = 0;
    for c in &cases {
        let route = format!("{} {}", c.verb, c.pattern);
        let need = match table[&(c.verb, c.pattern)] {
            Need::Nothing => None,
            Need::Scope(s) | Need::Signed(s) => Some(s.as_str()),
        };
        // Keys that must be refused, and how.
        let mut attempts: Vec<(&str, Option<&str>, u16)> = vec![
            ("no key", None, 401),
            ("bad key", Some(&f.bad), 401),
            ("revoked key", Some(&f.revoked), 401),
            ("expired key", Some(&f.expired), 401),
        ];
        if let Some(s) = need {
            attempts.push(("wrong scope", Some(&f.all_but[s]), 403));
        }
        for (what, key, status) in attempts {
            let a = call(base, key, &c.target).await;
            if need.is_none() {
                // Health needs nothing, whatever is sent.
                assert_eq!(a.status, 200, "{route} with {what}: {}", a.text);
                continue;
            }
            assert_eq!(a.status, status, "{route} with {what}: {}", a.text);
            refused += 1;
            if status == 401 {
                assert_eq!(a.code(), "unauthorized", "{route} with {what}: {}", a.text);
                assert!(
                    a.www_authenticate
                        .as_deref()
                        .is_some_and(|h| h.starts_with("Bearer")),
                    "{route} with {what}: no WWW-Authenticate"
                );
            } else {
                assert_eq!(a.code(), "forbidden", "{route} with {what}: {}", a.text);
                let needed = format!("\"{}\"", need.unwrap_or_default());
                assert!(
                    a.json()["error"]["message"]
                        .as_str()
                        .is_some_and(|m| m.contains(&needed)),
                    "{route} with {what}: the refusal should name {needed}: {}",
                    a.text
                );
            }
            unchanged(
                &f.snapshot().await,
                &baseline,
                &format!("{route} with {what}"),
            );
        }
        let other_key = need.map(|s| f.other_only[s].as_str());
        match &c.other {
            Other::NotApplicable => {}
            Other::Hidden {
                req,
                missing,
                swap,
                status,
            } => {
                let a = call(base, other_key, req.as_ref().unwrap_or(&c.target)).await;
                let m = call(base, other_key, missing).await;
                assert_eq!(a.status, *status, "{route} by the other tenant: {}", a.text);
                assert_eq!(
                    (a.status, a.text.clone()),
                    (m.status, m.text.replace(&swap.0, &swap.1)),
                    "{route}: another tenant's resource must look missing"
                );
                assert!(!a.text.contains(MARK), "{route} leaked: {}", a.text);
            }
            Other::Own {
                req,
                status,
                contains,
            } => {
                let a = call(base, other_key, req).await;
                assert_eq!(a.status, *status, "{route} by the other tenant: {}", a.text);
                if let Some(text) = contains {
                    assert!(
                        a.text.contains(text),
                        "{route} by the other tenant: {}",
                        a.text
                    );
                }
                assert!(
                    !a.text.contains(MARK) && !a.text.contains(&format!("\"tenant\":\"{OWNER}\"")),
                    "{route} by the other tenant leaked the owner's data: {}",
                    a.text
                );
            }
        }
        if !matches!(c.other, Other::NotApplicable) {
            unchanged(
                &f.settled().await,
                &baseline,
                &format!("{route} by the other tenant"),
            );
        }
        let right_key = need.map(|s| f.only[s].as_str());
        let a = call(base, right_key, &c.right).await;
        assert_eq!(
            a.status, c.right_status,
            "{route} with the right key: {}",
            a.text
        );
        if c.verb != "GET" {
            baseline = f.settled().await;
        }
    }
    eprintln!(
        "matrix: {} routes, {refused} refused requests checked in {:.1} s",
        cases.len(),
        started.elapsed().as_secs_f64()
    );
}

/// `POST /v1/jobs/{id}:resend-unread`, an action of the route whose case
/// cancels (one case per route): refused without the campaign scope, another tenant's job looks
/// missing (and gets no resend), the owner's campaign key starts one.
async fn resend_unread(f: &Fixture, base: &str, baseline: &BTreeMap<String, String>) {
    let target = req(Method::POST, format!("/v1/jobs/{}:resend-unread", f.job));
    let missing = req(Method::POST, format!("/v1/jobs/{FAKE}:resend-unread"));
    let a = call(base, Some(&f.all_but["campaign"]), &target).await;
    assert_eq!(
        (a.status, a.code()),
        (403, json!("forbidden")),
        "{}",
        a.text
    );
    let a = call(base, Some(&f.other_only["campaign"]), &target).await;
    let m = call(base, Some(&f.other_only["campaign"]), &missing).await;
    assert_eq!(a.status, 404, "{}", a.text);
    assert_eq!(
        a.text,
        m.text.replace(FAKE, &f.job.to_string()),
        "another tenant's job must look missing"
    );
    assert!(!a.text.contains(MARK), "leaked: {}", a.text);
    unchanged(
        &f.settled().await,
        baseline,
        "resend-unread by the other tenant",
    );
    let a = call(base, Some(&f.only["campaign"]), &target).await;
    assert_eq!(a.status, 201, "{}", a.text);
    assert_eq!(a.json()["follows"], f.job, "{}", a.text);
}

async fn protected(store: &str, dir: tempfile::TempDir) -> Server {
    Server::start_with_env(store, dir, "", &[("HERALD_ADMIN_KEY", ADMIN)]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_refuses_the_wrong_callers_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", dir.path().join("herald.db").display());
    let s = protected(&store, dir).await;
    matrix(&s.url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_refuses_the_wrong_callers_on_postgres() {
    let Some((_db, store)) = pg_database("isolation") else {
        return;
    };
    let s = protected(&store, tempfile::tempdir().unwrap()).await;
    matrix(&s.url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_revoked_on_one_node_is_refused_by_the_others_within_2_s() {
    let Some((_db, store)) = pg_database("revoke") else {
        return;
    };
    let node = |id: &'static str| {
        let store = store.clone();
        async move {
            Server::start_with_env(
                &store,
                tempfile::tempdir().unwrap(),
                &format!("node_id = \"{id}\""),
                &[("HERALD_ADMIN_KEY", ADMIN)],
            )
            .await
        }
    };
    let a = node("node-a").await;
    let b = node("node-b").await;
    let c = node("node-c").await;
    let key = create_key(&a.url, OWNER, &["read"], json!({})).await;
    let secret = secret(&key);
    let probe = req(Method::GET, "/v1/rules");
    // Every node knows the key (and has it in its cache) before the revoke.
    for n in [&a, &b, &c] {
        let r = call(&n.url, Some(&secret), &probe).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let r = call(
        &a.url,
        Some(ADMIN),
        &req(Method::DELETE, format!("/v1/keys/{}", key["id"])),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let revoked = Instant::now();
    let mut refused_after = BTreeMap::new();
    while refused_after.len() < 3 {
        for (name, n) in [("a", &a), ("b", &b), ("c", &c)] {
            if refused_after.contains_key(name) {
                continue;
            }
            let r = call(&n.url, Some(&secret), &probe).await;
            if r.status == 401 {
                refused_after.insert(name, revoked.elapsed());
            } else {
                assert_eq!(r.status, 200, "{}", r.text);
            }
        }
        assert!(
            revoked.elapsed() < Duration::from_secs(3),
            "not every node refused the revoked key: {refused_after:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("revoked key refused after {refused_after:?}");
    for (name, after) in &refused_after {
        assert!(
            *after <= Duration::from_secs(2),
            "node {name} refused the revoked key only after {after:?}"
        );
    }
}

/// `herald ARGS` with `HERALD_KEY` (if given); (success, stdout, stderr).
fn cli(server: &str, key: Option<&str>, args: &[&str]) -> (bool, String, String) {
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(args)
        .args(["--server", server])
        .env_remove("HERALD_KEY")
        .env_remove("HERALD_SERVER");
    if let Some(k) = key {
        cmd.env("HERALD_KEY", k);
    }
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_creates_uses_and_revokes_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", dir.path().join("herald.db").display());
    let s = protected(&store, dir).await;
    let url = s.url.clone();
    let (ok, out, err) = cli(
        &url,
        Some(ADMIN),
        &[
            "keys", "create", "--tenant", OWNER, "--scope", "write", "--scope", "read", "--name",
            "cli-key",
        ],
    );
    assert!(ok, "{err}");
    let key = out.lines().next().unwrap().trim().to_string();
    assert!(key.starts_with("hrk_"), "{out}");
    let created: Value = serde_json::from_str(out.split_once('\n').unwrap().1).unwrap();
    assert_eq!(created["tenant"], OWNER);
    assert_eq!(created["name"], "cli-key");
    let id = created["id"].as_i64().unwrap().to_string();

    // --key on the command line, and HERALD_KEY.
    let (ok, out, err) = cli(
        &url,
        None,
        &[
            "timers",
            "add",
            "--channel",
            "log",
            "--recipient",
            "r",
            "--delay-ms",
            "3600000",
            "--key",
            &key,
        ],
    );
    assert!(ok, "{err}");
    let timer: Value = serde_json::from_str(&out).unwrap();
    let timer_id = timer["id"].as_i64().unwrap().to_string();
    let (ok, out, err) = cli(&url, Some(&key), &["timers", "get", &timer_id]);
    assert!(ok && out.contains("\"pending\""), "{out}{err}");

    // A scope the key lacks: the server's refusal, and a failure.
    let (ok, out, err) = cli(
        &url,
        Some(&key),
        &[
            "jobs",
            "create",
            "--users",
            "u1",
            "--channel",
            "log",
            "--message",
            "{}",
        ],
    );
    assert!(!ok);
    assert!(
        out.is_empty() && err.contains("403 forbidden") && err.contains("\"campaign\""),
        "{out}{err}"
    );

    let (ok, out, err) = cli(&url, Some(ADMIN), &["keys", "ls", "--tenant", OWNER]);
    assert!(
        ok && out.contains("cli-key") && !out.contains(&key),
        "{out}{err}"
    );
    let all: Value = serde_json::from_str(&out).unwrap();
    let (ok, out, err) = cli(
        &url,
        Some(ADMIN),
        &["keys", "ls", "--tenant", OWNER, "--limit", "1"],
    );
    assert!(ok, "{out}{err}");
    let first: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(first["keys"], json!([all["keys"][0]]), "{out}");
    assert_eq!(first["next_after"], all["keys"][0]["id"], "{out}");
    // The audit log is written in batches, at least every 100 ms.
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let (ok, out, err) = cli(
            &url,
            Some(ADMIN),
            &["audit", "--tenant", OWNER, "--limit", "10"],
        );
        assert!(ok, "{out}{err}");
        // The refused job (a single timer create is data, not audited
        // unless `[audit] data_plane` says so).
        if out.contains("/v1/jobs") {
            assert!(out.contains("cli-key"), "{out}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no audit entry of the CLI's refused job: {out}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let (ok, out, err) = cli(&url, Some(ADMIN), &["keys", "revoke", &id]);
    assert!(ok, "{out}{err}");
    let revoked: Value = serde_json::from_str(&out).unwrap();
    assert!(revoked["revoked_at"].is_string(), "{out}");
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let (ok, out, err) = cli(&url, Some(&key), &["timers", "get", &timer_id]);
        if !ok {
            assert!(
                out.is_empty() && err.contains("401 unauthorized"),
                "{out}{err}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "the revoked key still works");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
