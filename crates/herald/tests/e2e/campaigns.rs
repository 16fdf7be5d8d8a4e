//! Rules, audiences and jobs end to end: the real `herald` binary on SQLite,
//! a real mock sink over HTTP, `kill -9` mid-campaign.

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// Short leases and quick sweeps so re-issues happen within a test's patience.
fn jobs_config(hook: &str, channel_extra: &str, jobs_extra: &str) -> String {
    Server::webhook_config(
        hook,
        channel_extra,
        &format!(
            "[jobs]\nlease_ms = 3000\nlease_guard_ms = 500\nsweep_interval_ms = 200\nplanner_interval_ms = 200\n\
             idle_poll_ms = 100\nrecord_every = 200\nretry_backoff_ms = 200\n{jobs_extra}"
        ),
    )
}

/// Uploads `n` recipients `{tag}-{i}` as NDJSON; returns the audience id.
async fn upload(server: &Server, n: usize, tag: &str) -> i64 {
    let mut body = String::with_capacity(n * 32);
    for i in 0..n {
        body.push_str(&format!("{{\"recipient\":\"{tag}-{i}\"}}\n"));
    }
    let (st, v) = server
        .post_raw("/v1/audiences", "application/x-ndjson", body)
        .await;
    assert_eq!(st, 201, "{v}");
    assert_eq!(v["size"], n as u64);
    v["id"].as_i64().expect("audience id")
}

async fn create_job(server: &Server, body: &Value) -> i64 {
    let (st, v) = server.post("/v1/jobs", body).await;
    assert_eq!(st, 201, "{v}");
    v["id"].as_i64().expect("job id")
}

async fn job(server: &Server, id: i64) -> Value {
    let (st, v) = server.get(&format!("/v1/jobs/{id}")).await;
    assert_eq!(st, 200, "{v}");
    v
}

async fn wait_job_final(server: &Server, id: i64, timeout: Duration) -> Value {
    wait_for("the job to end", timeout, || async {
        job(server, id).await["state"] != "running"
    })
    .await;
    job(server, id).await
}

/// The totals always account for every recipient exactly once.
fn assert_totals_add_up(j: &Value) {
    let t = &j["totals"];
    let n = |k: &str| t[k].as_u64().unwrap_or_else(|| panic!("totals.{k} in {j}"));
    assert_eq!(
        n("sent") + n("failed") + n("expired") + n("cancelled") + n("in_doubt") + n("remaining"),
        n("total"),
        "totals must add up: {j}"
    );
    assert!(n("retrying") <= n("remaining"), "{j}");
}

/// Reads the whole send log of a job and checks every index `0..total`
/// appears exactly once, in state `want`. Returns the rows' recipients by index.
async fn assert_send_log_once(server: &Server, id: i64, total: u64, want: &str) {
    let mut seen = vec![false; total as usize];
    let mut start = 0u64;
    while start < total {
        let end = (start + 1000).min(total);
        let (st, v) = server
            .get(&format!("/v1/jobs/{id}/sends?start={start}&end={end}"))
            .await;
        assert_eq!(st, 200, "{v}");
        for row in v["sends"].as_array().expect("sends") {
            let idx = row["index"].as_u64().expect("index") as usize;
            assert!(!seen[idx], "index {idx} twice in the send log");
            seen[idx] = true;
            assert_eq!(row["state"], want, "{row}");
        }
        start = end;
    }
    let missing = seen.iter().filter(|s| !**s).count();
    assert_eq!(missing, 0, "{missing} recipients missing from the send log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_killed_mid_way_reaches_every_recipient_exactly_once() {
    let n = 1_000_000usize;
    let mock = Mock::start(&[]).await;
    let mut server = Server::start(&jobs_config(
        &mock.hook(),
        "concurrency = 64",
        "workers = 4\nworker_concurrency = 32",
    ))
    .await;
    let audience = upload(&server, n, "crash").await;
    let id = create_job(
        &server,
        &json!({"audience_id": audience, "channel": "hooks", "message": {"text": "sale"}}),
    )
    .await;
    wait_for(
        "a third of the campaign",
        Duration::from_secs(600),
        || async { mock.stats().await["unique_delivered"].as_u64().unwrap_or(0) >= n as u64 / 3 },
    )
    .await;
    server.kill9().await;
    let at_kill = mock.stats().await["unique_delivered"].as_u64().unwrap_or(0);
    assert!(at_kill < n as u64, "the kill must land mid-campaign");
    server.restart().await;
    let j = wait_job_final(&server, id, Duration::from_secs(900)).await;
    assert_eq!(j["state"], "done", "{j}");
    assert_eq!(j["totals"]["sent"], n as u64, "{j}");
    assert_eq!(j["totals"]["remaining"], 0, "{j}");
    assert_totals_add_up(&j);
    assert_send_log_once(&server, id, n as u64, "delivered").await;

    let stats = mock.stats().await;
    assert_eq!(stats["unique_delivered"], n as u64, "{stats}");
    // A send that was in flight, or answered but not yet written, when the
    // process died is in doubt; a webhook resends it under the same
    // idempotency key, and the sink delivers it once and counts the repeat.
    // At most the doubt window: workers x doubt_window.
    let repeats = stats["duplicates"].as_u64().unwrap_or(0);
    println!("kill -9 at {at_kill} of {n}: {repeats} repeated keys");
    let bound = 4 * herald_engine::campaign::DEFAULT_DOUBT_WINDOW;
    assert!(repeats <= bound, "repeats {repeats} over {bound}: {stats}");
    let segs = &j["segments"];
    assert!(
        segs["abandoned"].as_u64().unwrap_or(0) > 0,
        "the kill left claims to re-issue: {j}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retryable_failures_leave_partial_segments_that_are_reissued_for_those_recipients_only() {
    let n = 5_000usize;
    let mock = Mock::start(&[]).await;
    // Each key's first request fails with a 503: every recipient needs a re-issue.
    let (st, _) = post_raw(
        &format!("{}/_mock/faults", mock.url),
        "application/json",
        json!({"fail_first": 1, "error_status": 503}).to_string(),
    )
    .await;
    assert_eq!(st, 200);
    let server = Server::start(&jobs_config(&mock.hook(), "concurrency = 64", "")).await;
    let audience = upload(&server, n, "partial").await;
    let id = create_job(
        &server,
        &json!({"audience_id": audience, "channel": "hooks", "message": {"m": 1}, "segment_size": 500}),
    )
    .await;
    let j = wait_job_final(&server, id, Duration::from_secs(120)).await;
    assert_eq!(j["state"], "done", "{j}");
    assert_eq!(j["totals"]["sent"], n as u64, "{j}");
    assert!(j["segments"]["partial"].as_u64().unwrap_or(0) >= 10, "{j}");
    let stats = mock.stats().await;
    assert_eq!(stats["unique_delivered"], n as u64, "{stats}");
    assert_eq!(stats["duplicates"], 0, "{stats}");
    // Exactly two requests per key: the failed one and the re-issued one.
    assert_eq!(stats["received"], 2 * n as u64, "{stats}");
    let (_, v) = server
        .get(&format!("/v1/jobs/{id}/sends?start=0&end=10"))
        .await;
    for row in v["sends"].as_array().unwrap() {
        assert_eq!(row["attempts"], 2, "{row}");
    }
    assert_send_log_once(&server, id, n as u64, "delivered").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_job_s_failed_sends_are_grouped_and_sent_again() {
    let n = 20usize;
    let mock = Mock::start(&[]).await;
    // Each key's first request is refused for good (400): every send fails.
    let (st, _) = post_raw(
        &format!("{}/_mock/faults", mock.url),
        "application/json",
        json!({"fail_first": 1, "error_status": 400}).to_string(),
    )
    .await;
    assert_eq!(st, 200);
    let server = Server::start(&jobs_config(&mock.hook(), "", "")).await;
    let audience = upload(&server, n, "again").await;
    let id = create_job(
        &server,
        &json!({"audience_id": audience, "channel": "hooks", "message": {"m": 1}, "segment_size": 8}),
    )
    .await;
    let j = wait_job_final(&server, id, Duration::from_secs(30)).await;
    assert_eq!(
        (j["state"].clone(), j["totals"]["failed"].clone()),
        (json!("done"), json!(n)),
        "{j}"
    );
    let (st, f) = server.get(&format!("/v1/jobs/{id}/failures")).await;
    assert_eq!(st, 200, "{f}");
    assert_eq!(f["scanned"], n as u64, "{f}");
    assert_eq!(f["groups"].as_array().map(Vec::len), Some(1), "{f}");
    assert_eq!(f["groups"][0]["count"], n as u64, "{f}");

    let (st, r) = server
        .post(&format!("/v1/jobs/{id}:retry-failed"), &json!({}))
        .await;
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["retried"], n as u64, "{r}");
    assert_totals_add_up(&r["job"]);
    let j = wait_job_final(&server, id, Duration::from_secs(30)).await;
    assert_eq!(j["state"], "done", "{j}");
    assert_eq!(j["totals"]["sent"], n as u64, "{j}");
    assert_eq!(j["totals"]["failed"], 0, "{j}");
    let stats = mock.stats().await;
    assert_eq!(stats["unique_delivered"], n as u64, "{stats}");
    assert_eq!(stats["received"], 2 * n as u64, "{stats}");
    let (_, v) = server
        .get(&format!("/v1/jobs/{id}/sends?start=0&end=3"))
        .await;
    for row in v["sends"].as_array().into_iter().flatten() {
        assert_eq!(row["attempts"], 2, "{row}");
    }
    let (_, f) = server.get(&format!("/v1/jobs/{id}/failures")).await;
    assert_eq!(f["scanned"], 0, "{f}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_deadline_a_job_stops_and_the_rest_end_expired() {
    let n = 20_000usize;
    let mock = Mock::start(&[]).await;
    let server = Server::start(&jobs_config(&mock.hook(), "rate_per_sec = 500", "")).await;
    let audience = upload(&server, n, "late").await;
    let id = create_job(
        &server,
        &json!({"audience_id": audience, "channel": "hooks", "message": {"m": 1}, "deadline_secs": 3}),
    )
    .await;
    let j = wait_job_final(&server, id, Duration::from_secs(60)).await;
    assert_eq!(j["state"], "expired", "{j}");
    assert_totals_add_up(&j);
    let sent = j["totals"]["sent"].as_u64().unwrap();
    let expired = j["totals"]["expired"].as_u64().unwrap();
    assert!(sent > 0 && sent < n as u64, "{j}");
    assert_eq!(sent + expired, n as u64, "{j}");
    assert_eq!(j["totals"]["remaining"], 0, "{j}");
    // Sends started before the deadline may be recorded just after the job
    // ended; they move out of `expired`. Then nothing more leaves: the sink and
    // the job agree, and stay put.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let j = job(&server, id).await;
    assert_totals_add_up(&j);
    let sent = j["totals"]["sent"].as_u64().unwrap();
    let stats = mock.stats().await;
    assert_eq!(
        stats["unique_delivered"].as_u64(),
        Some(sent),
        "{stats} vs {j}"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(mock.stats().await["unique_delivered"].as_u64(), Some(sent));
    let deadline = parse_ms(j["deadline"].as_str().expect("deadline"));
    let last = stats["last_delivered_at_ms"].as_i64().unwrap();
    assert!(
        last <= deadline + 1_000,
        "a send left {} ms after the deadline",
        last - deadline
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_high_priority_job_overtakes_a_running_low_priority_campaign() {
    let mock = Mock::start(&[]).await;
    let server = Server::start(&jobs_config(&mock.hook(), "rate_per_sec = 2000", "")).await;
    let big = upload(&server, 200_000, "bulk").await;
    let low = create_job(
        &server,
        &json!({"audience_id": big, "channel": "hooks", "message": {"m": "low"}, "priority": 1}),
    )
    .await;
    wait_for(
        "the low-priority campaign to start",
        Duration::from_secs(30),
        || async {
            job(&server, low).await["totals"]["sent"]
                .as_u64()
                .unwrap_or(0)
                > 1000
        },
    )
    .await;
    let high = create_job(
        &server,
        &json!({"users": ["vip-1", "vip-2", "vip-3"], "channel": "hooks", "message": {"m": "high"}, "priority": 9}),
    )
    .await;
    let h = wait_job_final(&server, high, Duration::from_secs(30)).await;
    assert_eq!(h["state"], "done", "{h}");
    assert_eq!(h["totals"]["sent"], 3);
    let l = job(&server, low).await;
    assert_eq!(
        l["state"], "running",
        "the big campaign is still going: {l}"
    );
    assert!(l["totals"]["remaining"].as_u64().unwrap() > 100_000, "{l}");
    let (st, c) = server
        .post(&format!("/v1/jobs/{low}:cancel"), &json!({}))
        .await;
    assert_eq!(st, 200, "{c}");
    let l = wait_job_final(&server, low, Duration::from_secs(30)).await;
    assert_eq!(l["state"], "cancelled", "{l}");
    assert_totals_add_up(&l);
    assert!(l["totals"]["cancelled"].as_u64().unwrap() > 0, "{l}");
}

/// A rate-limited channel serves its waiting sends by priority, timers' and
/// campaigns' alike: an urgent timer due while a low-priority campaign holds
/// the rate goes within a few sends, not behind every campaign sender.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_urgent_timer_overtakes_a_campaign_at_the_channel_rate() {
    let mock = Mock::start(&[]).await;
    let server = Server::start(&jobs_config(
        &mock.hook(),
        "rate_per_sec = 20\nconcurrency = 4",
        "workers = 4",
    ))
    .await;
    let big = upload(&server, 3_000, "bulk").await;
    let low = create_job(
        &server,
        &json!({"audience_id": big, "channel": "hooks", "message": {"m": "low"}, "priority": 1, "segment_size": 100}),
    )
    .await;
    wait_for(
        "the campaign to hold the rate",
        Duration::from_secs(30),
        || async {
            job(&server, low).await["totals"]["sent"]
                .as_u64()
                .unwrap_or(0)
                > 40
        },
    )
    .await;
    let before = mock.requests(None).await.len();
    let (st, t) = server
        .post(
            "/v1/timers",
            &json!({"delay_ms": 0, "channel": "hooks", "recipient": "urgent", "priority": 9, "message": {"m": "now"}}),
        )
        .await;
    assert_eq!(st, 201, "{t}");
    let id = t["id"].as_i64().unwrap();
    let mut v = Value::Null;
    for _ in 0..300 {
        let (_, got) = server.get(&format!("/v1/timers/{id}")).await;
        v = got;
        if v["state"] == "done" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(v["state"], "done", "{v}");
    let reqs = mock.requests(None).await;
    let pos = reqs
        .iter()
        .position(|r| r["body"]["recipient"] == "urgent")
        .unwrap();
    // Between its creation and its send the campaign got at most the slots
    // already handed out and the one taken while the timer was fetched.
    let overtaken_by = pos.saturating_sub(before);
    assert!(
        overtaken_by <= 4,
        "{overtaken_by} campaign sends went before the urgent timer"
    );
    let (st, _) = server
        .post(&format!("/v1/jobs/{low}:cancel"), &json!({}))
        .await;
    assert_eq!(st, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_numbers_add_up_while_sending_and_after() {
    let n = 30_000usize;
    let mock = Mock::start(&[]).await;
    let server = Server::start(&jobs_config(&mock.hook(), "rate_per_sec = 5000", "")).await;
    let audience = upload(&server, n, "prog").await;
    let id = create_job(
        &server,
        &json!({"audience_id": audience, "channel": "hooks", "message": {"m": 1}, "segment_size": 1000}),
    )
    .await;
    let mut saw_rate = false;
    let mut last_sent = 0;
    loop {
        let j = job(&server, id).await;
        assert_totals_add_up(&j);
        let sent = j["totals"]["sent"].as_u64().unwrap();
        assert!(sent >= last_sent, "sent never goes down");
        last_sent = sent;
        let segs: u64 = j["segments"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert!(segs >= (n / 1000) as u64, "{j}");
        if j["state"] != "running" {
            break;
        }
        if j["rate_per_sec"].as_f64().unwrap_or(0.0) > 0.0 && j["eta_secs"].is_number() {
            saw_rate = true;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(saw_rate, "a running job reports a rate and an ETA");
    let j = job(&server, id).await;
    assert_eq!(j["state"], "done");
    assert_eq!(j["totals"]["sent"], n as u64);
    assert_eq!(j["segments"]["done"], (n / 1000) as u64, "{j}");
    assert_eq!(mock.stats().await["unique_delivered"], n as u64);
}

// ---- Rules ----

async fn rule_tasks(server: &Server, id: i64) -> Vec<Value> {
    let (st, v) = server.get(&format!("/v1/rules/{id}/tasks")).await;
    assert_eq!(st, 200, "{v}");
    v["tasks"].as_array().cloned().unwrap_or_default()
}

/// Messages the sink received, by recipient.
async fn messages_by_recipient(mock: &Mock) -> HashMap<String, Vec<Value>> {
    let mut out: HashMap<String, Vec<Value>> = HashMap::new();
    for r in mock.requests(None).await {
        let body = &r["body"];
        if let Some(to) = body["recipient"].as_str() {
            out.entry(to.to_string())
                .or_default()
                .push(body["message"].clone());
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_updated_after_planning_sends_only_its_new_version() {
    let mock = Mock::start(&[]).await;
    let server = Server::start(&jobs_config(&mock.hook(), "", "")).await;
    let at = rfc3339(now_ms() + 4_000);
    let rule = json!({
        "name": "coupon opens",
        "schedule": {"type": "at", "at": at},
        "audience": {"users": ["u1", "u2"]},
        "channel": "hooks",
        "message": {"text": "v1"},
    });
    let (st, r) = server.post("/v1/rules", &rule).await;
    assert_eq!(st, 201, "{r}");
    let id = r["id"].as_i64().unwrap();
    wait_for(
        "the v1 task to be planned",
        Duration::from_secs(10),
        || async {
            rule_tasks(&server, id)
                .await
                .iter()
                .any(|t| t["version"] == 1 && t["state"] == "pending")
        },
    )
    .await;
    let mut v2 = rule.clone();
    v2["message"] = json!({"text": "v2"});
    let (st, r2) = server.put(&format!("/v1/rules/{id}"), &v2).await;
    assert_eq!(st, 200, "{r2}");
    assert_eq!(r2["version"], 2);
    wait_for("both tasks to end", Duration::from_secs(30), || async {
        let t = rule_tasks(&server, id).await;
        t.len() == 2
            && t.iter()
                .all(|t| t["state"] != "pending" && t["state"] != "running")
    })
    .await;
    let tasks = rule_tasks(&server, id).await;
    let v1 = tasks.iter().find(|t| t["version"] == 1).unwrap();
    let v2t = tasks.iter().find(|t| t["version"] == 2).unwrap();
    assert_eq!(v1["state"], "expired", "{v1}");
    assert!(v1["job_id"].is_null(), "a stale task never sends: {v1}");
    assert_eq!(v2t["state"], "succeeded", "{v2t}");
    assert_eq!(v2t["recipients"], 2, "{v2t}");
    assert_eq!(v1["planned_at"], v2t["planned_at"]);
    wait_for("two deliveries", Duration::from_secs(10), || async {
        mock.stats().await["unique_delivered"] == 2
    })
    .await;
    let msgs = messages_by_recipient(&mock).await;
    for u in ["u1", "u2"] {
        assert_eq!(msgs[u], vec![json!({"text": "v2"})], "{u}: {msgs:?}");
    }
    let (_, versions) = server.get(&format!("/v1/rules/{id}/versions")).await;
    assert_eq!(
        versions["versions"].as_array().unwrap().len(),
        2,
        "{versions}"
    );
    // A one-off rule whose occurrence has run is finished.
    wait_for("the rule to finish", Duration::from_secs(10), || async {
        server.get(&format!("/v1/rules/{id}")).await.1["status"] == "finished"
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabling_a_rule_cancels_its_pending_task_and_enabling_plans_again() {
    let mock = Mock::start(&[]).await;
    let server = Server::start(&jobs_config(&mock.hook(), "", "")).await;
    let (st, r) = server
        .post(
            "/v1/rules",
            &json!({
                "name": "daily",
                "schedule": {"type": "cron", "cron": "0 9 * * *", "timezone": "Asia/Shanghai"},
                "audience": {"users": ["u1"]},
                "channel": "hooks",
                "message": {"text": "morning"},
            }),
        )
        .await;
    assert_eq!(st, 201, "{r}");
    let id = r["id"].as_i64().unwrap();
    assert!(r["next_run_at"].is_string(), "{r}");
    wait_for("a planned task", Duration::from_secs(10), || async {
        rule_tasks(&server, id)
            .await
            .iter()
            .any(|t| t["state"] == "pending")
    })
    .await;
    let (st, d) = server
        .post(&format!("/v1/rules/{id}:disable"), &json!({}))
        .await;
    assert_eq!(st, 200, "{d}");
    assert_eq!(d["status"], "disabled");
    let tasks = rule_tasks(&server, id).await;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(tasks[0]["state"], "cancelled", "{tasks:?}");
    // Nothing is planned while disabled.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(rule_tasks(&server, id).await.len(), 1);
    let (st, e) = server
        .post(&format!("/v1/rules/{id}:enable"), &json!({}))
        .await;
    assert_eq!(st, 200, "{e}");
    wait_for("a new planned task", Duration::from_secs(10), || async {
        rule_tasks(&server, id)
            .await
            .iter()
            .any(|t| t["state"] == "pending")
    })
    .await;
    assert_eq!(mock.stats().await["received"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cron_rule_runs_each_occurrence_and_finishes_at_its_end() {
    let mock = Mock::start(&[]).await;
    // A rule every second is below the default floor of a minute.
    let no_floor = "[api]\nrule_min_interval_secs = 0\n";
    let server = Server::start(&jobs_config(&mock.hook(), "", no_floor)).await;
    let start = now_ms();
    let (st, r) = server
        .post(
            "/v1/rules",
            &json!({
                "name": "every second, briefly",
                "schedule": {"type": "cron", "cron": "* * * * * *", "timezone": "Europe/Berlin",
                             "end_at": rfc3339(start + 3_500)},
                "audience": {"users": ["u1"]},
                "channel": "hooks",
                "message": {"text": "tick"},
            }),
        )
        .await;
    assert_eq!(st, 201, "{r}");
    let id = r["id"].as_i64().unwrap();
    wait_for("the rule to finish", Duration::from_secs(30), || async {
        server.get(&format!("/v1/rules/{id}")).await.1["status"] == "finished"
    })
    .await;
    let tasks = rule_tasks(&server, id).await;
    assert!((2..=4).contains(&tasks.len()), "{tasks:?}");
    let mut planned: Vec<i64> = tasks
        .iter()
        .map(|t| parse_ms(t["planned_at"].as_str().unwrap()))
        .collect();
    planned.sort();
    for w in planned.windows(2) {
        assert_eq!(w[1] - w[0], 1000, "one task per second: {planned:?}");
    }
    assert!(planned.iter().all(|p| *p <= start + 3_500));
    for t in &tasks {
        assert_eq!(t["state"], "succeeded", "{t}");
    }
    wait_for("one delivery per task", Duration::from_secs(10), || async {
        mock.stats().await["unique_delivered"].as_u64() == Some(tasks.len() as u64)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_rules_jobs_and_audiences_are_refused_and_change_nothing() {
    let mock = Mock::start(&[]).await;
    let server = Server::start(&jobs_config(&mock.hook(), "", "")).await;
    let good = json!({
        "name": "r",
        "schedule": {"type": "cron", "cron": "0 9 * * 1-5", "timezone": "Asia/Shanghai",
                     "exclude_dates": ["2026-10-01"]},
        "audience": {"users": ["u1"]},
        "channel": "hooks",
        "message": {"text": "hi"},
    });
    let cases: Vec<(Value, &str)> = vec![
        (
            {
                let mut b = good.clone();
                b["schedule"]["cron"] = json!("61 9 * * *");
                b
            },
            "schedule.cron",
        ),
        (
            {
                let mut b = good.clone();
                b["schedule"]["timezone"] = json!("Mars/Olympus");
                b
            },
            "schedule.timezone",
        ),
        (
            {
                let mut b = good.clone();
                b["schedule"]["exclude_dates"] = json!(["2026-13-01"]);
                b
            },
            "schedule.exclude_dates[0]",
        ),
        (
            {
                let mut b = good.clone();
                b["channel"] = json!("nope");
                b
            },
            "channel",
        ),
        (
            {
                let mut b = good.clone();
                b["message"] = json!("text");
                b
            },
            "message",
        ),
        (
            {
                let mut b = good.clone();
                b["audience"] = json!({"parties": ["sales"]});
                b
            },
            "audience.parties",
        ),
        (
            {
                let mut b = good.clone();
                b["audience"] = json!({});
                b
            },
            "audience",
        ),
        (
            {
                let mut b = good.clone();
                b["priority"] = json!(12);
                b
            },
            "priority",
        ),
    ];
    for (body, field) in cases {
        let (st, v) = server.post("/v1/rules", &body).await;
        assert_eq!(st, 400, "{field}: {v}");
        assert_eq!(v["error"]["field"], field, "{v}");
    }
    let (_, list) = server.get("/v1/rules").await;
    assert_eq!(list["rules"].as_array().map(|a| a.len()), Some(0), "{list}");

    // A bad line anywhere in an upload refuses the whole audience.
    let body = "{\"recipient\":\"a\"}\n{\"recipient\":\"b\"}\n{\"recipent\":\"c\"}\n".to_string();
    let (st, v) = server
        .post_raw("/v1/audiences", "application/x-ndjson", body)
        .await;
    assert_eq!(st, 400, "{v}");
    assert_eq!(v["error"]["field"], "line 3", "{v}");
    let (st, v) = server
        .post_raw("/v1/audiences", "application/xml", "<a/>".into())
        .await;
    assert_eq!(st, 415, "{v}");
    // CSV with a header and a quoted field.
    let csv = "recipient,name\nalice,A\n\"bob,jr\",B\n\ncarol\n".to_string();
    let (st, v) = server.post_raw("/v1/audiences", "text/csv", csv).await;
    assert_eq!(st, 201, "{v}");
    assert_eq!(v["size"], 3, "{v}");

    let (st, v) = server
        .post(
            "/v1/jobs",
            &json!({"audience_id": 999_999, "channel": "hooks", "message": {}}),
        )
        .await;
    assert_eq!(st, 400, "{v}");
    assert_eq!(v["error"]["field"], "audience_id", "{v}");
    let (st, v) = server
        .post(
            "/v1/jobs",
            &json!({"users": ["a"], "audience_id": 1, "channel": "hooks", "message": {}}),
        )
        .await;
    assert_eq!(st, 400, "{v}");
    let (_, jobs) = server.get("/v1/jobs").await;
    assert_eq!(jobs["jobs"].as_array().map(|a| a.len()), Some(0), "{jobs}");
}
