//! The source designs' last gaps (issue 39 §5), each against the real
//! binary on both stores: a job's name and category, listed and filtered;
//! when segments finished; who made and changed rules, jobs and tasks; a
//! rule's expected receivers.

use crate::common;

use common::*;
use serde_json::{Value, json};

/// A server on SQLite (`None`) or on `store`, with a webhook channel
/// `hooks` and a WeCom channel `wc`, both to the mock.
async fn server(store: Option<&str>, mock: &Mock) -> Server {
    let wecom = format!(
        "[[channels]]\nname = \"wc\"\nkind = \"wecom\"\napi_base = \"{}\"\n\
         corpid = \"wwmockcorp\"\ncorpsecret = \"mock-wecom-secret\"\nagentid = 1000002\n",
        mock.url
    );
    let cfg = Server::webhook_config(&mock.hook(), "", &wecom);
    match store {
        None => Server::start(&cfg).await,
        Some(url) => Server::start_on(url, tempfile::tempdir().unwrap(), &cfg).await,
    }
}

/// Runs `scenario` on a fresh PostgreSQL database, or says why it skips.
macro_rules! on_postgres {
    ($what:literal, $scenario:ident) => {
        let Some((_db, url)) = pg_database("gaps") else {
            eprintln!(concat!(
                "PostgreSQL not installed: ",
                $what,
                " on PostgreSQL skipped"
            ));
            return;
        };
        $scenario(Some(&url)).await;
    };
}

fn ids(list: &Value) -> Vec<i64> {
    list["jobs"]
        .as_array()
        .unwrap_or_else(|| panic!("no jobs in {list}"))
        .iter()
        .map(|j| j["id"].as_i64().unwrap())
        .collect()
}

async fn job(s: &Server, extra: Value) -> Value {
    let mut b = json!({"users": ["u1", "u2"], "channel": "hooks", "message": {"text": "hi"}});
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    let (st, v) = s.post("/v1/jobs", &b).await;
    assert_eq!(st, 201, "{v}");
    v
}

// ---- 1. A job's name and category ----

async fn names_and_categories(store: Option<&str>) {
    let mock = Mock::start(&[]).await;
    let s = server(store, &mock).await;
    let a = job(
        &s,
        json!({"name": "coupon 10:00", "category": "coupon-reminder"}),
    )
    .await;
    assert_eq!(
        (&a["name"], &a["category"]),
        (&json!("coupon 10:00"), &json!("coupon-reminder"))
    );
    let b = job(
        &s,
        json!({"name": "spring sale · 春季", "category": "marketing"}),
    )
    .await;
    let c = job(
        &s,
        json!({"name": "coupon 12:00", "category": "coupon-reminder"}),
    )
    .await;
    let plain = job(&s, json!({})).await;
    assert_eq!(
        (&plain["name"], &plain["category"]),
        (&Value::Null, &Value::Null)
    );
    // Open access: no key made it.
    assert_eq!(
        (&plain["created_by"], &plain["changed_by"]),
        (&Value::Null, &Value::Null)
    );
    let [a, b, c, plain] = [a, b, c, plain].map(|j| j["id"].as_i64().unwrap());

    // Bad labels are refused, naming the field, and create nothing.
    let long = "n".repeat(201);
    for (body, field) in [
        (json!({"category": "coupon reminder"}), "category"),
        (json!({"category": ""}), "category"),
        (json!({"category": "c".repeat(65)}), "category"),
        (json!({"name": ""}), "name"),
        (json!({"name": "a\nb"}), "name"),
        (json!({"name": long}), "name"),
    ] {
        let mut full = json!({"users": ["u1"], "channel": "hooks", "message": {"text": "x"}});
        for (k, v) in body.as_object().unwrap() {
            full[k] = v.clone();
        }
        let (st, v) = s.post("/v1/jobs", &full).await;
        assert_eq!(
            (st, v["error"]["field"].as_str()),
            (400, Some(field)),
            "{body}: {v}"
        );
    }
    let (_, all) = s.get("/v1/jobs").await;
    assert_eq!(ids(&all), vec![plain, c, b, a]);

    // Read back, listed, and filtered: a category exactly, a name by prefix.
    let (_, got) = s.get(&format!("/v1/jobs/{b}")).await;
    assert_eq!(
        (&got["name"], &got["category"]),
        (&json!("spring sale · 春季"), &json!("marketing"))
    );
    for (query, want) in [
        ("?category=coupon-reminder", vec![c, a]),
        ("?category=coupon-reminder&limit=1", vec![c]),
        (&format!("?category=coupon-reminder&before={c}"), vec![a]),
        ("?category=coupon", vec![]),
        ("?name=coupon", vec![c, a]),
        ("?name=coupon%2010", vec![a]),
        ("?name=Coupon", vec![]),
        ("?name=spring%20sale%20%C2%B7", vec![b]),
        ("?category=marketing&name=spring", vec![b]),
        ("?category=marketing&name=coupon", vec![]),
    ] {
        let (st, list) = s.get(&format!("/v1/jobs{query}")).await;
        assert_eq!(st, 200, "{query}: {list}");
        assert_eq!(ids(&list), want, "{query}");
    }
    for (query, field) in [("?category=a%20b", "category"), ("?name=", "name")] {
        let (st, v) = s.get(&format!("/v1/jobs{query}")).await;
        assert_eq!(
            (st, v["error"]["field"].as_str()),
            (400, Some(field)),
            "{query}: {v}"
        );
    }
}

#[tokio::test]
async fn jobs_have_a_name_and_a_category_on_sqlite() {
    names_and_categories(None).await;
}

#[tokio::test]
async fn jobs_have_a_name_and_a_category_on_postgres() {
    on_postgres!("job names", names_and_categories);
}

// ---- 2. When segments finished ----

async fn segments_of(s: &Server, job: i64) -> Vec<Value> {
    let (st, v) = s.get(&format!("/v1/jobs/{job}/segments")).await;
    assert_eq!(st, 200, "{v}");
    v["segments"].as_array().unwrap().clone()
}

async fn segment_ends(store: Option<&str>) {
    let mock = Mock::start(&[]).await;
    let s = server(store, &mock).await;
    // Sent through: every segment ended between its creation and the job's end.
    let done = job(&s, json!({"users": ["a", "b", "c"], "segment_size": 1})).await;
    let id = done["id"].as_i64().unwrap();
    wait_for(
        "the job done",
        std::time::Duration::from_secs(60),
        || async { s.get(&format!("/v1/jobs/{id}")).await.1["state"] == "done" },
    )
    .await;
    let finished = parse_ms(
        s.get(&format!("/v1/jobs/{id}")).await.1["finished_at"]
            .as_str()
            .unwrap(),
    );
    let segs = segments_of(&s, id).await;
    assert_eq!(segs.len(), 3);
    for g in &segs {
        assert_eq!(g["state"], "done", "{g}");
        let at = parse_ms(g["finished_at"].as_str().unwrap_or_else(|| panic!("{g}")));
        assert!(
            parse_ms(g["created_at"].as_str().unwrap()) <= at && at <= finished,
            "{g}"
        );
    }
    // Cancelled, most likely before it could send (its channel paused; a
    // node may see the pause a moment late, and a segment sent by then
    // ended `done` before the cancel): each ended with what ended it.
    let (st, v) = s.post("/v1/channels/hooks:pause", &json!({})).await;
    assert_eq!(st, 200, "{v}");
    let held = job(&s, json!({"users": ["d", "e"], "segment_size": 1})).await;
    let held = held["id"].as_i64().unwrap();
    let before = now_ms();
    let (st, v) = s.post(&format!("/v1/jobs/{held}:cancel"), &json!({})).await;
    assert_eq!(st, 200, "{v}");
    let after = now_ms();
    for g in segments_of(&s, held).await {
        let at = parse_ms(g["finished_at"].as_str().unwrap_or_else(|| panic!("{g}")));
        match g["state"].as_str() {
            Some("cancelled") => assert!(at >= before - 5 && at <= after + 5, "{g}"),
            Some("done") => assert!(at <= after + 5, "{g}"),
            _ => panic!("a segment neither cancelled nor done: {g}"),
        }
    }
}

#[tokio::test]
async fn segments_show_when_they_finished_on_sqlite() {
    segment_ends(None).await;
}

#[tokio::test]
async fn segments_show_when_they_finished_on_postgres() {
    on_postgres!("segment ends", segment_ends);
}

// ---- 3. Who made and changed rules, jobs and tasks ----

const ADMIN: &str = "e2e-gaps-admin-key-0123456789abcdef";

/// A node that asks for keys, on SQLite (`None`) or on `store`.
async fn protected(store: Option<&str>, mock: &Mock) -> Server {
    let cfg = Server::webhook_config(&mock.hook(), "", "");
    let dir = tempfile::tempdir().unwrap();
    let url = match store {
        Some(url) => url.to_string(),
        None => format!("sqlite://{}", dir.path().join("data/herald.db").display()),
    };
    Server::start_with_env(&url, dir, &cfg, &[("HERALD_ADMIN_KEY", ADMIN)]).await
}

/// One request with `key`: status and JSON body.
async fn as_key(
    s: &Server,
    key: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = client()
        .request(method, format!("{}{path}", s.url))
        .bearer_auth(key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    let st = resp.status().as_u16();
    (st, resp.json().await.unwrap_or(Value::Null))
}

fn actor(id: Option<i64>, name: &str) -> Value {
    json!({"key_id": id, "key_name": name})
}

async fn who(store: Option<&str>) {
    use reqwest::Method;
    let mock = Mock::start(&[]).await;
    let s = protected(store, &mock).await;
    let (st, k) = as_key(
        &s,
        ADMIN,
        Method::POST,
        "/v1/keys",
        Some(json!({"tenant": "default", "scopes": ["campaign", "read"], "name": "ops"})),
    )
    .await;
    assert_eq!(st, 201, "{k}");
    let (ops_id, ops) = (
        k["id"].as_i64().unwrap(),
        k["key"].as_str().unwrap().to_string(),
    );
    let ops_actor = actor(Some(ops_id), "ops");
    let admin_actor = actor(None, "admin");

    // A rule made by ops, changed by the admin key.
    let rule = json!({"name": "digest", "channel": "hooks", "message": {"text": "digest"},
                      "audience": {"users": ["carol"]},
                      "schedule": {"type": "cron", "cron": "0 9 * * *", "timezone": "Europe/Paris"}});
    let (st, r) = as_key(&s, &ops, Method::POST, "/v1/rules", Some(rule.clone())).await;
    assert_eq!(st, 201, "{r}");
    assert_eq!(
        (&r["created_by"], &r["changed_by"]),
        (&ops_actor, &ops_actor),
        "{r}"
    );
    let id = r["id"].as_i64().unwrap();
    let (st, r) = as_key(
        &s,
        ADMIN,
        Method::PUT,
        &format!("/v1/rules/{id}"),
        Some(rule),
    )
    .await;
    assert_eq!(st, 200, "{r}");
    let (_, r) = as_key(&s, &ops, Method::GET, &format!("/v1/rules/{id}"), None).await;
    assert_eq!(
        (&r["created_by"], &r["changed_by"]),
        (&ops_actor, &admin_actor),
        "{r}"
    );
    // The planner's task carries the key behind the version it planned;
    // disabling the rule names ops on the task it cancels.
    let tasks = format!("/v1/rules/{id}/tasks");
    wait_for(
        "a planned task",
        std::time::Duration::from_secs(30),
        || async {
            let (_, t) = as_key(&s, &ops, Method::GET, &tasks, None).await;
            t["tasks"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["version"] == 2))
        },
    )
    .await;
    let (st, r) = as_key(
        &s,
        &ops,
        Method::POST,
        &format!("/v1/rules/{id}:disable"),
        None,
    )
    .await;
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["changed_by"], ops_actor, "{r}");
    let (_, t) = as_key(&s, &ops, Method::GET, &tasks, None).await;
    let task = t["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["version"] == 2)
        .unwrap()
        .clone();
    assert_eq!(task["state"], "cancelled", "{task}");
    assert_eq!(
        (&task["created_by"], &task["changed_by"]),
        (&admin_actor, &ops_actor),
        "{task}"
    );

    // A job made by ops, cancelled by the admin key.
    let (st, j) = as_key(
        &s,
        &ops,
        Method::POST,
        "/v1/jobs",
        Some(
            json!({"users": ["a"], "channel": "hooks", "message": {"text": "x"},
                    "deadline_secs": 3600}),
        ),
    )
    .await;
    assert_eq!(st, 201, "{j}");
    assert_eq!(
        (&j["created_by"], &j["changed_by"]),
        (&ops_actor, &Value::Null),
        "{j}"
    );
    let jid = j["id"].as_i64().unwrap();
    let (st, j) = as_key(
        &s,
        ADMIN,
        Method::POST,
        &format!("/v1/jobs/{jid}:cancel"),
        None,
    )
    .await;
    assert_eq!(st, 200, "{j}");
    // Cancelled, or done before the cancel came (then nobody changed it).
    let want = if j["state"] == "cancelled" {
        admin_actor
    } else {
        Value::Null
    };
    let (_, j) = as_key(&s, &ops, Method::GET, &format!("/v1/jobs/{jid}"), None).await;
    assert_eq!(
        (&j["created_by"], &j["changed_by"]),
        (&ops_actor, &want),
        "{j}"
    );
}

#[tokio::test]
async fn rules_jobs_and_tasks_show_who_made_them_on_sqlite() {
    who(None).await;
}

#[tokio::test]
async fn rules_jobs_and_tasks_show_who_made_them_on_postgres() {
    on_postgres!("actors", who);
}

// ---- 4. A rule's expected receivers ----

async fn receivers(store: Option<&str>) {
    let mock = Mock::start(&[]).await;
    let s = server(store, &mock).await;
    let rule = |audience: Value, channel: &str| {
        let message = if channel == "wc" {
            json!({"msgtype": "text", "text": {"content": "hi"}})
        } else {
            json!({"text": "hi"})
        };
        json!({"name": "count", "channel": channel, "message": message,
               "audience": audience,
               "schedule": {"type": "cron", "cron": "0 9 * * *", "timezone": "UTC"}})
    };
    let expected = |audience: Value, channel: &'static str| {
        let s = &s;
        let body = rule(audience, channel);
        async move {
            let (st, r) = s.post("/v1/rules", &body).await;
            assert_eq!(st, 201, "{r}");
            // Only the rule's own read counts them.
            assert!(r.get("expected_receivers").is_none(), "{r}");
            let (st, r) = s.get(&format!("/v1/rules/{}", r["id"])).await;
            assert_eq!(st, 200, "{r}");
            (
                r["expected_receivers"].clone(),
                r["expected_receivers_unknown"].clone(),
            )
        }
    };
    // Users listed inline: their number.
    let (n, why) = expected(json!({"users": ["a", "b", "c"]}), "hooks").await;
    assert_eq!((n, why), (json!(3), Value::Null));
    // An uploaded audience: its size.
    let body: String = (0..5)
        .map(|i| format!("{{\"recipient\":\"r{i}\"}}\n"))
        .collect();
    let (st, a) = s
        .post_raw("/v1/audiences", "application/x-ndjson", body)
        .await;
    assert_eq!(st, 201, "{a}");
    let (n, why) = expected(json!({"audience_id": a["id"]}), "hooks").await;
    assert_eq!((n, why), (json!(5), Value::Null));
    // Parties or tags: the provider expands them; nobody knows how many.
    for audience in [
        json!({"parties": ["2"]}),
        json!({"users": ["a"], "tags": ["7"]}),
    ] {
        let (n, why) = expected(audience.clone(), "wc").await;
        assert_eq!(n, Value::Null, "{audience}");
        assert!(
            why.as_str().is_some_and(|w| w.contains("parties or tags")),
            "{audience}: {why}"
        );
    }
}

#[tokio::test]
async fn rules_show_their_expected_receivers_on_sqlite() {
    receivers(None).await;
}

#[tokio::test]
async fn rules_show_their_expected_receivers_on_postgres() {
    on_postgres!("expected receivers", receivers);
}

// ---- 5. Cancelling one planned task of a rule ----

/// The rule's tasks, newest first.
async fn tasks_of(s: &Server, rule: i64) -> Vec<Value> {
    let (st, t) = s.get(&format!("/v1/rules/{rule}/tasks")).await;
    assert_eq!(st, 200, "{t}");
    t["tasks"].as_array().unwrap().clone()
}

/// Waits for a task of `rule` that `pick` accepts.
async fn wait_task(s: &Server, rule: i64, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(t) = tasks_of(s, rule).await.into_iter().find(|t| pick(t)) {
            return t;
        }
        assert!(std::time::Instant::now() < deadline, "no task: {what}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

async fn one_task(store: Option<&str>) {
    let mock = Mock::start(&[]).await;
    let mut s = server(store, &mock).await;
    let daily = json!({"name": "daily", "channel": "hooks", "message": {"text": "hi"},
                       "audience": {"users": ["a"]},
                       "schedule": {"type": "cron", "cron": "0 9 * * *", "timezone": "UTC"}});
    let (st, r) = s.post("/v1/rules", &daily).await;
    assert_eq!(st, 201, "{r}");
    let id = r["id"].as_i64().unwrap();
    let first = wait_task(&s, id, "the first occurrence", |t| t["state"] == "pending").await;
    let at = parse_ms(first["planned_at"].as_str().unwrap());
    let tid = first["id"].as_i64().unwrap();
    let (_, rule) = s.get(&format!("/v1/rules/{id}")).await;
    assert_eq!(parse_ms(rule["next_run_at"].as_str().unwrap()), at);

    // Cancelled: the task says so; the same call again answers the same.
    let cancel = format!("/v1/rules/{id}/tasks/{tid}:cancel");
    let (st, t) = s.post(&cancel, &json!({})).await;
    assert_eq!(st, 200, "{t}");
    assert_eq!(
        (t["id"].as_i64(), &t["state"]),
        (Some(tid), &json!("cancelled")),
        "{t}"
    );
    assert!(
        t["finished_at"].is_string() && t["detail"].is_string(),
        "{t}"
    );
    let (st, again) = s.post(&cancel, &json!({})).await;
    assert_eq!((st, &again), (200, &t));

    // The rule is as it was and plans its next occurrence, a day later.
    let next = wait_task(&s, id, "the next occurrence", |t| t["state"] == "pending").await;
    assert_eq!(
        parse_ms(next["planned_at"].as_str().unwrap()),
        at + 86_400_000
    );
    let (_, rule) = s.get(&format!("/v1/rules/{id}")).await;
    assert_eq!(rule["status"], "enabled", "{rule}");
    assert_eq!(
        parse_ms(rule["next_run_at"].as_str().unwrap()),
        at + 86_400_000
    );

    // Durable: after a crash the task is still cancelled, never planned again.
    s.kill9().await;
    s.restart().await;
    let tasks = tasks_of(&s, id).await;
    let states: Vec<(i64, &str)> = tasks
        .iter()
        .map(|t| {
            (
                parse_ms(t["planned_at"].as_str().unwrap()),
                t["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        states,
        vec![(at + 86_400_000, "pending"), (at, "cancelled")]
    );

    // Refused, changing nothing: an unknown task, another rule's, an unknown
    // action, a task that already started.
    let (st, v) = s
        .post(&format!("/v1/rules/{id}/tasks/999999:cancel"), &json!({}))
        .await;
    assert_eq!(st, 404, "{v}");
    let (st, v) = s
        .post(&format!("/v1/rules/{id}/tasks/{tid}:start"), &json!({}))
        .await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (404, Some("unknown_action")),
        "{v}"
    );
    let now = json!({"name": "now", "channel": "hooks", "message": {"text": "hi"},
                     "audience": {"users": ["b"]}, "schedule": {"type": "immediate"}});
    let (st, r2) = s.post("/v1/rules", &now).await;
    assert_eq!(st, 201, "{r2}");
    let id2 = r2["id"].as_i64().unwrap();
    let started = wait_task(&s, id2, "the immediate run started", |t| {
        t["state"] != "pending"
    })
    .await;
    let sid = started["id"].as_i64().unwrap();
    let (st, v) = s
        .post(&format!("/v1/rules/{id}/tasks/{sid}:cancel"), &json!({}))
        .await;
    assert_eq!(st, 404, "another rule's task: {v}");
    let (st, v) = s
        .post(&format!("/v1/rules/{id2}/tasks/{sid}:cancel"), &json!({}))
        .await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (409, Some("task_not_pending")),
        "{v}"
    );
    let after = tasks_of(&s, id2).await;
    assert_ne!(after[0]["state"], "cancelled", "{after:?}");
}

#[tokio::test]
async fn one_planned_task_is_cancelled_on_sqlite() {
    one_task(None).await;
}

#[tokio::test]
async fn one_planned_task_is_cancelled_on_postgres() {
    on_postgres!("task cancel", one_task);
}
