//! In-doubt sends of a campaign (see "The path of a campaign" in
//! docs/architecture.md): `kill -9` the real server in the
//! middle of a 100,000-recipient webhook campaign, restart it on the same
//! store, and count at the sink what arrived twice. With the default
//! configuration (`in_doubt = "resend"` for a webhook) at most the doubt
//! window goes twice: `workers × doubt_window`. With `in_doubt = "skip"`
//! nothing goes twice and the recipients that were in doubt end `in_doubt`,
//! whatever the window. Each runs on SQLite and on PostgreSQL, at the
//! default window and at a tight one (64), where the bound is tight too.
//!
//! `HERALD_DOUBT_WINDOWS=64,128,...` runs the ignored `doubt_window_curve`
//! at each window on both stores and prints what each crash repeated (the
//! table in docs/benchmarks/in-doubt.md).

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

const RECIPIENTS: u64 = 100_000;
/// `jobs.workers` by default.
const WORKERS: u64 = 4;
/// `jobs.doubt_window` by default.
const DEFAULT_WINDOW: u64 = herald_engine::campaign::DEFAULT_DOUBT_WINDOW;

/// What one crash left: the job at its end and the sink's counts.
struct Crash {
    job: Value,
    unique: u64,
    duplicates: u64,
}

/// The default `[jobs]` except for a short lease and quick sweeps, so the
/// dead node's segments are re-issued within a test's patience, and the
/// doubt window `window`. `workers`, `worker_concurrency` and
/// `record_every` keep their defaults.
fn config(hook: &str, channel_extra: &str, window: u64) -> String {
    Server::webhook_config(
        hook,
        channel_extra,
        &format!(
            "[jobs]\nlease_ms = 3000\nlease_guard_ms = 500\nsweep_interval_ms = 200\n\
             planner_interval_ms = 200\nidle_poll_ms = 100\ndoubt_window = {window}"
        ),
    )
}

async fn crash_mid_campaign(
    store: Option<&str>,
    channel_extra: &str,
    window: u64,
    tag: &str,
) -> Crash {
    let mock = Mock::start(&[]).await;
    let cfg = config(&mock.hook(), channel_extra, window);
    let mut server = match store {
        Some(url) => Server::start_on(url, tempfile::tempdir().unwrap(), &cfg).await,
        None => Server::start(&cfg).await,
    };
    let mut body = String::with_capacity(RECIPIENTS as usize * 32);
    for i in 0..RECIPIENTS {
        body.push_str(&format!("{{\"recipient\":\"{tag}-{i}\"}}\n"));
    }
    let (st, v) = server
        .post_raw("/v1/audiences", "application/x-ndjson", body)
        .await;
    assert_eq!(st, 201, "{v}");
    let audience = v["id"].as_i64().expect("audience id");
    let (st, v) = server
        .post(
            "/v1/jobs",
            &json!({"audience_id": audience, "channel": "hooks", "message": {"text": "sale"}}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    let id = v["id"].as_i64().expect("job id");
    wait_for(
        "a third of the campaign",
        Duration::from_secs(300),
        || async { mock.stats().await["unique_delivered"].as_u64().unwrap_or(0) >= RECIPIENTS / 3 },
    )
    .await;
    server.kill9().await;
    let at_kill = mock.stats().await["unique_delivered"].as_u64().unwrap_or(0);
    assert!(at_kill < RECIPIENTS, "the kill must land mid-campaign");
    server.restart().await;
    let path = format!("/v1/jobs/{id}");
    wait_for("the job to end", Duration::from_secs(300), || async {
        server.get(&path).await.1["state"] != "running"
    })
    .await;
    let (_, job) = server.get(&path).await;
    let stats = mock.stats().await;
    let n = |k: &str| {
        stats[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} in {stats}"))
    };
    let crash = Crash {
        job,
        unique: n("unique_delivered"),
        duplicates: n("duplicates"),
    };
    let t = &crash.job["totals"];
    eprintln!(
        "in-doubt crash test ({tag}, doubt_window {window}): kill -9 at {at_kill} of {RECIPIENTS}; sink: {} unique, {} repeated; job: {} sent, {} in doubt",
        crash.unique, crash.duplicates, t["sent"], t["in_doubt"]
    );
    // Whatever else, the totals account for every recipient once.
    let total = |k: &str| t[k].as_u64().unwrap_or_else(|| panic!("totals.{k}"));
    assert_eq!(crash.job["state"], "done", "{}", crash.job);
    assert_eq!(total("remaining"), 0, "{}", crash.job);
    assert_eq!(total("failed") + total("expired") + total("cancelled"), 0);
    assert_eq!(
        total("sent") + total("in_doubt"),
        RECIPIENTS,
        "{}",
        crash.job
    );
    // The dead node held claims, and they were re-issued.
    assert!(
        crash.job["segments"]["abandoned"].as_u64().unwrap_or(0) > 0,
        "{}",
        crash.job
    );
    // The in-doubt list is the job's in-doubt total.
    let mut listed = 0u64;
    let mut after: Option<u64> = None;
    loop {
        let q = after.map_or(String::new(), |a| format!("&after={a}"));
        let (st, v) = server
            .get(&format!(
                "/v1/jobs/{id}/sends?outcome=in_doubt&limit=1000{q}"
            ))
            .await;
        assert_eq!(st, 200, "{v}");
        for row in v["sends"].as_array().expect("sends") {
            assert_eq!(row["state"], "in_doubt", "{row}");
            listed += 1;
        }
        match v["next_after"].as_u64() {
            Some(a) => after = Some(a),
            None => break,
        }
    }
    assert_eq!(listed, total("in_doubt"));
    // The operator's answer to the list: send them. Every recipient is then
    // sent (the repeats are the operator's choice, not counted above).
    let (st, v) = server
        .post(&format!("/v1/jobs/{id}:retry-in-doubt"), &json!({}))
        .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["retried"].as_u64(), Some(total("in_doubt")), "{v}");
    if total("in_doubt") > 0 {
        wait_for(
            "the in-doubt retry to end",
            Duration::from_secs(120),
            || async { server.get(&path).await.1["state"] == "done" },
        )
        .await;
        let (_, after) = server.get(&path).await;
        let t = &after["totals"];
        assert_eq!(t["sent"].as_u64(), Some(RECIPIENTS), "{after}");
        assert_eq!(t["in_doubt"].as_u64(), Some(0), "{after}");
        let unique = mock.stats().await["unique_delivered"].as_u64();
        assert_eq!(unique, Some(RECIPIENTS), "every recipient at the sink");
    }
    crash
}

/// Resend: every recipient delivered; repeats only from the window.
fn check_resend(c: &Crash, window: u64) {
    let bound = WORKERS * window;
    assert_eq!(c.unique, RECIPIENTS, "every recipient reached the sink");
    assert_eq!(c.job["totals"]["in_doubt"], 0, "{}", c.job);
    assert!(
        c.duplicates <= bound,
        "{} repeats, more than the window of {bound}",
        c.duplicates
    );
}

/// Skip: nothing twice; what was in doubt ended so, and nothing else.
fn check_skip(c: &Crash, window: u64) {
    let bound = WORKERS * window;
    assert_eq!(c.duplicates, 0, "skip sends nothing twice");
    let in_doubt = c.job["totals"]["in_doubt"].as_u64().unwrap_or(0);
    assert!(
        in_doubt <= bound,
        "{in_doubt} in doubt, more than the window of {bound}"
    );
    let sent = c.job["totals"]["sent"].as_u64().unwrap_or(0);
    // The sink saw every recipient the job counts as sent, and perhaps some
    // of those in doubt.
    assert!(
        c.unique >= sent && c.unique <= RECIPIENTS,
        "{} at the sink",
        c.unique
    );
}

const SKIP: &str = "in_doubt = \"skip\"";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_resend_repeats_at_most_the_window() {
    let c = crash_mid_campaign(None, "", DEFAULT_WINDOW, "resend-sqlite").await;
    check_resend(&c, DEFAULT_WINDOW);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_skip_repeats_nothing() {
    let c = crash_mid_campaign(None, SKIP, DEFAULT_WINDOW, "skip-sqlite").await;
    check_skip(&c, DEFAULT_WINDOW);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_tight_window_repeats_at_most_it() {
    let c = crash_mid_campaign(None, "", 64, "resend64-sqlite").await;
    check_resend(&c, 64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_skip_at_a_wide_window_repeats_nothing() {
    let c = crash_mid_campaign(None, SKIP, 1_024, "skip1024-sqlite").await;
    check_skip(&c, 1_024);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_resend_repeats_at_most_the_window() {
    let Some((_db, url)) = pg_database("doubt_resend") else {
        return;
    };
    let c = crash_mid_campaign(Some(&url), "", DEFAULT_WINDOW, "resend-pg").await;
    check_resend(&c, DEFAULT_WINDOW);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_skip_repeats_nothing() {
    let Some((_db, url)) = pg_database("doubt_skip") else {
        return;
    };
    let c = crash_mid_campaign(Some(&url), SKIP, DEFAULT_WINDOW, "skip-pg").await;
    check_skip(&c, DEFAULT_WINDOW);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_tight_window_repeats_at_most_it() {
    let Some((_db, url)) = pg_database("doubt_resend64") else {
        return;
    };
    let c = crash_mid_campaign(Some(&url), "", 64, "resend64-pg").await;
    check_resend(&c, 64);
}

/// The duplicates half of the doubt-window curve: one crash per window in
/// `HERALD_DOUBT_WINDOWS` (comma-separated) on each store, `resend`, each
/// checked against its bound. Ignored: run by hand for the benchmarks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn doubt_window_curve() {
    let windows: Vec<u64> = std::env::var("HERALD_DOUBT_WINDOWS")
        .unwrap_or_else(|_| "64,128,256,564,1024".into())
        .split(',')
        .map(|w| w.trim().parse().expect("HERALD_DOUBT_WINDOWS: numbers"))
        .collect();
    for &w in &windows {
        let c = crash_mid_campaign(None, "", w, &format!("curve{w}-sqlite")).await;
        check_resend(&c, w);
        if let Some((_db, url)) = pg_database(&format!("doubt_curve_{w}")) {
            let c = crash_mid_campaign(Some(&url), "", w, &format!("curve{w}-pg")).await;
            check_resend(&c, w);
        }
    }
}
