//! Stored reports against the real binary, on both stores: timers and a small
//! campaign go through `herald mock` (each key's first request failing, so
//! every recipient is counted once as `retry` and once as `delivered`),
//! `GET /v1/reports` counts them, the counts are unchanged after a restart,
//! and `herald reports` prints them.

use crate::common;

use std::time::Duration;

use common::{Mock, Server, pg_database, wait_for};
use serde_json::{Value, json};

const TIMERS: u64 = 5;
const RECIPIENTS: u64 = 20;

fn config(hook: &str) -> String {
    Server::webhook_config(
        hook,
        "backoff_base_ms = 100\nbackoff_max_ms = 400",
        "[jobs]\nlease_ms = 3000\nlease_guard_ms = 500\nsweep_interval_ms = 200\n\
         idle_poll_ms = 100\nretry_backoff_ms = 200",
    )
}

async fn report(s: &Server, query: &str) -> Value {
    let (st, v) = s.get(&format!("/v1/reports?{query}")).await;
    assert_eq!(st, 200, "{query}: {v}");
    v
}

/// `(channel, outcome, job, count)` rows of a report grouped by those.
fn rows(v: &Value) -> Vec<(String, String, Value, u64)> {
    v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["channel"].as_str().expect("channel").to_string(),
                r["outcome"].as_str().expect("outcome").to_string(),
                r["job"].clone(),
                r["count"].as_u64().expect("count"),
            )
        })
        .collect()
}

/// Sends the timers and the campaign and waits for both to finish; the job's id.
async fn send_everything(s: &Server) -> i64 {
    let mut ids = Vec::new();
    for i in 0..TIMERS {
        let (st, v) = s
            .post(
                "/v1/timers",
                &json!({"delay_ms": 0, "channel": "hooks", "recipient": format!("t-{i}"), "message": {}}),
            )
            .await;
        assert_eq!(st, 201, "{v}");
        ids.push(v["id"].as_i64().expect("id"));
    }
    let body: String = (0..RECIPIENTS)
        .map(|i| format!("{{\"recipient\":\"r-{i}\"}}\n"))
        .collect();
    let (st, v) = s
        .post_raw("/v1/audiences", "application/x-ndjson", body)
        .await;
    assert_eq!(st, 201, "{v}");
    let (st, v) = s
        .post(
            "/v1/jobs",
            &json!({"audience_id": v["id"], "channel": "hooks", "message": {"m": 1}, "segment_size": 10}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    let job = v["id"].as_i64().expect("job id");
    wait_for("the timers and the job", Duration::from_secs(120), || {
        let ids = ids.clone();
        async move {
            for id in ids {
                if s.timer(id).await["state"] != "done" {
                    return false;
                }
            }
            s.get(&format!("/v1/jobs/{job}")).await.1["state"] == "done"
        }
    })
    .await;
    job
}

/// Runs `herald reports ARGS --server URL`: exit success, stdout and stderr.
async fn cli(server: &str, args: &[&str]) -> (bool, String) {
    let (ok, out, err) = common::herald_cli("reports", server, args).await;
    (ok, out + &err)
}

async fn scenario(store: Option<&str>) {
    let mock = Mock::start(&["--fail-first", "1", "--error-status", "503"]).await;
    let mut s = match store {
        Some(url) => {
            Server::start_on(url, tempfile::tempdir().unwrap(), &config(&mock.hook())).await
        }
        None => Server::start(&config(&mock.hook())).await,
    };
    let job = send_everything(&s).await;

    // Every key failed once, then went through: one retry and one delivery
    // each, the timers' under no job, the campaign's under its job.
    let by_job = "group_by=channel,outcome,job";
    let got = report(&s, by_job).await;
    let (t, r) = (TIMERS, RECIPIENTS);
    assert_eq!(
        rows(&got),
        [
            ("hooks".into(), "delivered".into(), Value::Null, t),
            ("hooks".into(), "delivered".into(), json!(job), r),
            ("hooks".into(), "retry".into(), Value::Null, t),
            ("hooks".into(), "retry".into(), json!(job), r),
        ],
        "{got}"
    );
    assert_eq!(got["total"], 2 * (t + r));
    // Today (UTC) holds them all; the job filter only the campaign's.
    let today = &report(&s, "group_by=day").await["rows"][0];
    let day = today["day"].as_str().expect("day").to_string();
    assert_eq!(today["count"], 2 * (t + r), "{today}");
    let only = report(
        &s,
        &format!("group_by=outcome&job={job}&from={day}&to={day}"),
    )
    .await;
    assert_eq!(only["total"], 2 * r, "{only}");
    let delivered = report(&s, "group_by=&outcome=delivered").await;
    assert_eq!(delivered["rows"], json!([{"count": t + r}]), "{delivered}");

    // Bad queries are refused and name their field.
    for (query, field) in [
        ("group_by=channel,week", "group_by"),
        ("group_by=day,day", "group_by"),
        ("from=yesterday", "from"),
        ("from=2026-02-02&to=2026-02-01", "to"),
        ("job=0", "job"),
        ("limit=0", "limit"),
        ("colour=red", "colour"),
    ] {
        let (st, v) = s.get(&format!("/v1/reports?{query}")).await;
        assert_eq!(st, 400, "{query}: {v}");
        assert_eq!(v["error"]["field"], field, "{query}: {v}");
    }

    // Kept on the store: a restart changes nothing.
    s.terminate().await;
    s.restart().await;
    assert_eq!(report(&s, by_job).await, got, "the reports after a restart");

    // `herald reports` prints the same counts as a table (asked for: a
    // pipe, as here, gets JSON).
    let (ok, out) = cli(&s.url, &["--group-by", "channel,outcome", "--table"]).await;
    assert!(ok, "{out}");
    let lines: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["channel", "outcome", "count"], "{out}");
    let total = (t + r).to_string();
    assert!(lines.contains(&vec!["hooks", "delivered", &total]), "{out}");
    assert!(lines.contains(&vec!["hooks", "retry", &total]), "{out}");
    for piped in [&["--group-by", "job", "--json"][..], &["--group-by", "job"]] {
        let (ok, out) = cli(&s.url, piped).await;
        assert!(ok, "{out}");
        let v: Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(v["total"], 2 * (t + r), "{v}");
    }
    let (ok, out) = cli(&s.url, &["--group-by", "week"]).await;
    assert!(!ok, "{out}");
    assert!(out.contains("group_by"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_count_timers_and_campaigns_and_survive_a_restart_on_sqlite() {
    scenario(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_count_timers_and_campaigns_and_survive_a_restart_on_postgres() {
    let Some((_db, url)) = pg_database("reports") else {
        eprintln!("PostgreSQL not installed: reports test on PostgreSQL skipped");
        return;
    };
    scenario(Some(&url)).await;
}
