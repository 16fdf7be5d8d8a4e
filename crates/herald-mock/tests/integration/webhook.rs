//! The webhook sink over real HTTP.

use std::time::{Duration, Instant};

use herald_mock::{Faults, KeyStats, MockConfig, MockServer, RecordedRequest, WebhookStats};
use hmac::{Hmac, Mac};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use sha2::Sha256;

async fn start(cfg: MockConfig) -> MockServer {
    MockServer::start("127.0.0.1:0".parse().unwrap(), cfg)
        .await
        .expect("mock server starts")
}

async fn start_default() -> MockServer {
    start(MockConfig::default()).await
}

fn ms_text(t: Timestamp) -> String {
    format!("{t:.3}")
}

/// A delivery body due `late_ms` ago, fired `fire_ms` after it was due.
fn delivery(id: &str, late_ms: i64, fire_ms: i64) -> String {
    let due = Timestamp::now() - SignedDuration::from_millis(late_ms);
    let fired = due + SignedDuration::from_millis(fire_ms);
    json!({
        "id": id,
        "kind": "timer",
        "due_at": ms_text(due),
        "fired_at": ms_text(fired),
        "attempt": 1,
        "recipient": "user-1",
        "message": {"text": "hello"},
    })
    .to_string()
}

/// Herald's `X-Herald-Signature` of `body` sent at unix second `t`.
fn sign_at(secret: &str, t: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.{body}").as_bytes());
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    key: Option<&str>,
    body: String,
) -> reqwest::Response {
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .body(body);
    if let Some(k) = key {
        req = req.header("Idempotency-Key", k);
    }
    req.send().await.expect("request sent")
}

async fn post_status(client: &reqwest::Client, url: &str, key: &str) -> u16 {
    post(client, url, Some(key), delivery(key, 0, 0))
        .await
        .status()
        .as_u16()
}

async fn http_stats(client: &reqwest::Client, server: &MockServer) -> WebhookStats {
    client
        .get(format!("{}/_mock/stats", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn success_path_records_stats() {
    let server = start_default().await;
    let client = reqwest::Client::new();
    let before = Timestamp::now().as_millisecond() as u64;

    let resp = post(
        &client,
        &server.hook_url(),
        Some("k-1"),
        delivery("t-1", 0, 0),
    )
    .await;
    assert_eq!(resp.status().as_u16(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body, json!({"ok": true}));

    let stats = http_stats(&client, &server).await;
    assert_eq!(stats, server.stats());
    assert_eq!(stats.received, 1);
    assert_eq!(stats.delivered, 1);
    assert_eq!(stats.unique_delivered, 1);
    assert_eq!(stats.duplicates, 0);
    assert_eq!(stats.bad_signatures, 0);
    assert_eq!(stats.status_count(200), 1);
    assert_eq!(stats.by_status.len(), 1);
    assert_eq!(stats.lateness_ms.count, 1);
    assert_eq!(stats.fire_lateness_ms.count, 1);
    let first = stats.first_delivered_at_ms.expect("first delivery time");
    assert!(first >= before);
    assert_eq!(stats.last_delivered_at_ms, Some(first));

    let key: KeyStats = client
        .get(format!("{}/_mock/keys/k-1", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        key,
        KeyStats {
            requests: 1,
            delivered: 1
        }
    );
    assert_eq!(server.key_stats("unknown"), KeyStats::default());

    let recent: Vec<RecordedRequest> = client
        .get(format!("{}/_mock/requests", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(recent.len(), 1);
    let r = &recent[0];
    assert_eq!(r.key.as_deref(), Some("k-1"));
    assert_eq!(r.status, 200);
    assert_eq!(r.path, "/hook");
    assert_eq!(r.body["id"], "t-1");
    assert_eq!(r.body["message"]["text"], "hello");
    assert_eq!(
        r.headers.get("idempotency-key").map(String::as_str),
        Some("k-1")
    );
    assert_eq!(
        r.headers.get("content-type").map(String::as_str),
        Some("application/json")
    );
    assert!(!r.headers.contains_key("x-herald-signature"));
    assert!(r.received_at_ms >= before);
}

#[tokio::test]
async fn nested_hook_paths_are_accepted() {
    let server = start_default().await;
    let client = reqwest::Client::new();
    let url = format!("{}/hook/team-a/urgent", server.base_url());
    assert_eq!(post_status(&client, &url, "nested").await, 200);
    let recent = server.requests(10, None);
    assert_eq!(recent[0].path, "/hook/team-a/urgent");
    // Control and unknown routes are not hooks.
    let resp = client
        .post(format!("{}/nothook", server.base_url()))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    assert_eq!(server.stats().received, 1);
}

#[tokio::test]
async fn same_key_twice_counts_a_duplicate() {
    let server = start_default().await;
    let client = reqwest::Client::new();
    let url = server.hook_url();
    assert_eq!(post_status(&client, &url, "dup").await, 200);
    assert_eq!(post_status(&client, &url, "dup").await, 200);
    assert_eq!(post_status(&client, &url, "other").await, 200);

    let stats = server.stats();
    assert_eq!(stats.received, 3);
    assert_eq!(stats.delivered, 3);
    assert_eq!(stats.unique_delivered, 2);
    assert_eq!(stats.duplicates, 1);
    // Lateness is recorded only for each key's first delivery.
    assert_eq!(stats.lateness_ms.count, 2);
    assert_eq!(
        server.key_stats("dup"),
        KeyStats {
            requests: 2,
            delivered: 2
        }
    );
}

#[tokio::test]
async fn fail_first_is_per_key_and_deterministic() {
    let server = start(MockConfig {
        faults: Faults {
            fail_first: 2,
            ..Faults::default()
        },
        ..MockConfig::default()
    })
    .await;
    let client = reqwest::Client::new();
    let url = server.hook_url();
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(post_status(&client, &url, "flaky").await);
    }
    assert_eq!(seen, [500, 500, 200]);
    // A different key starts its own count.
    assert_eq!(post_status(&client, &url, "flaky-2").await, 500);
    // Once delivered, a key keeps succeeding.
    assert_eq!(post_status(&client, &url, "flaky").await, 200);

    assert_eq!(
        server.key_stats("flaky"),
        KeyStats {
            requests: 4,
            delivered: 2
        }
    );
    let stats = server.stats();
    assert_eq!(stats.status_count(500), 3);
    assert_eq!(stats.status_count(200), 2);
    assert_eq!(stats.unique_delivered, 1);
    assert_eq!(stats.duplicates, 1);
}

#[tokio::test]
async fn error_rate_one_fails_everything_with_error_status() {
    let server = start(MockConfig {
        faults: Faults {
            error_rate: 1.0,
            error_status: 503,
            ..Faults::default()
        },
        ..MockConfig::default()
    })
    .await;
    let client = reqwest::Client::new();
    for i in 0..20 {
        let resp = post(
            &client,
            &server.hook_url(),
            Some(&format!("k{i}")),
            delivery("t", 0, 0),
        )
        .await;
        assert_eq!(resp.status().as_u16(), 503);
        assert!(resp.headers().get("retry-after").is_none());
    }
    let stats = server.stats();
    assert_eq!(stats.received, 20);
    assert_eq!(stats.delivered, 0);
    assert_eq!(stats.unique_delivered, 0);
    assert_eq!(stats.status_count(503), 20);
    assert_eq!(stats.lateness_ms.count, 0);
    assert_eq!(stats.first_delivered_at_ms, None);
}

#[tokio::test]
async fn partial_error_rate_is_roughly_honoured() {
    let server = start(MockConfig {
        faults: Faults {
            error_rate: 0.5,
            ..Faults::default()
        },
        seed: 42,
        ..MockConfig::default()
    })
    .await;
    let client = reqwest::Client::new();
    let mut errors = 0;
    for i in 0..400 {
        if post_status(&client, &server.hook_url(), &format!("k{i}")).await == 500 {
            errors += 1;
        }
    }
    assert!((120..280).contains(&errors), "errors = {errors}");
    assert_eq!(server.stats().delivered, 400 - errors);
}

#[tokio::test]
async fn permanent_status_answers_every_request() {
    let server = start(MockConfig {
        faults: Faults {
            permanent_status: Some(400),
            ..Faults::default()
        },
        ..MockConfig::default()
    })
    .await;
    let client = reqwest::Client::new();
    for _ in 0..3 {
        assert_eq!(post_status(&client, &server.hook_url(), "p").await, 400);
    }
    let stats = server.stats();
    assert_eq!(stats.status_count(400), 3);
    assert_eq!(stats.delivered, 0);
    assert_eq!(
        server.key_stats("p"),
        KeyStats {
            requests: 3,
            delivered: 0
        }
    );
}

#[tokio::test]
async fn latency_is_applied() {
    let server = start(MockConfig {
        faults: Faults {
            latency_ms: 150,
            ..Faults::default()
        },
        ..MockConfig::default()
    })
    .await;
    let client = reqwest::Client::new();
    let started = Instant::now();
    assert_eq!(post_status(&client, &server.hook_url(), "slow").await, 200);
    assert!(started.elapsed() >= Duration::from_millis(150));

    // Errors are delayed too.
    server.set_faults(Faults {
        latency_ms: 100,
        permanent_status: Some(503),
        ..Faults::default()
    });
    let started = Instant::now();
    assert_eq!(post_status(&client, &server.hook_url(), "slow").await, 503);
    assert!(started.elapsed() >= Duration::from_millis(100));
}

#[tokio::test]
async fn retry_after_is_sent_on_injected_errors_only() {
    let server = start(MockConfig {
        faults: Faults {
            fail_first: 1,
            retry_after_secs: Some(7),
            ..Faults::default()
        },
        ..MockConfig::default()
    })
    .await;
    let client = reqwest::Client::new();
    let first = post(&client, &server.hook_url(), Some("r"), delivery("r", 0, 0)).await;
    assert_eq!(first.status().as_u16(), 500);
    assert_eq!(first.headers()["retry-after"], "7");

    let second = post(&client, &server.hook_url(), Some("r"), delivery("r", 0, 0)).await;
    assert_eq!(second.status().as_u16(), 200);
    assert!(second.headers().get("retry-after").is_none());

    // A validation error is not an injected fault.
    let bad = post(&client, &server.hook_url(), Some("x"), "nope".into()).await;
    assert_eq!(bad.status().as_u16(), 400);
    assert!(bad.headers().get("retry-after").is_none());
}

#[tokio::test]
async fn signatures_are_verified_when_a_secret_is_set() {
    let secret = "s3cret";
    let server = start(MockConfig {
        secret: Some(secret.into()),
        ..MockConfig::default()
    })
    .await;
    let client = reqwest::Client::new();
    let url = server.hook_url();
    let body = delivery("sig", 0, 0);
    let t = now_s();
    let sign = |secret: &str, body: &str| sign_at(secret, t, body);

    let good = client
        .post(&url)
        .header("Idempotency-Key", "good")
        .header("X-Herald-Signature", sign(secret, &body))
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(good.status().as_u16(), 200);

    let wrong = client
        .post(&url)
        .header("Idempotency-Key", "wrong")
        .header("X-Herald-Signature", sign("other-secret", &body))
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);

    // Signed with the right secret, but over different bytes.
    let tampered = client
        .post(&url)
        .header("Idempotency-Key", "tampered")
        .header("X-Herald-Signature", sign(secret, &body))
        .body(body.replace("hello", "HELLO"))
        .send()
        .await
        .unwrap();
    assert_eq!(tampered.status().as_u16(), 401);

    // No timestamp: the old `sha256=<hex>` form, or the v1 alone.
    let v1_only = sign(secret, &body).split_once(',').unwrap().1.to_string();
    for (key, value) in [("no-t", v1_only), ("sha256", "sha256=00".to_string())] {
        let r = client
            .post(&url)
            .header("Idempotency-Key", key)
            .header("X-Herald-Signature", value)
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 401, "{key}");
    }

    // A correct signature of ten minutes ago (a replay) or from the future.
    for (key, at) in [("old", t - 600), ("future", t + 600)] {
        let r = client
            .post(&url)
            .header("Idempotency-Key", key)
            .header("X-Herald-Signature", sign_at(secret, at, &body))
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 401, "{key}");
    }
    // Claiming another time than the one signed.
    let moved = sign(secret, &body).replace(&format!("t={t}"), &format!("t={}", t + 1));
    let r = client
        .post(&url)
        .header("Idempotency-Key", "moved")
        .header("X-Herald-Signature", moved)
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);

    let missing = post(&client, &url, Some("missing"), body.clone()).await;
    assert_eq!(missing.status().as_u16(), 401);

    let stats = server.stats();
    assert_eq!(stats.bad_signatures, 8);
    assert_eq!(stats.status_count(401), 8);
    assert_eq!(stats.delivered, 1);
    // Rejected requests do not count against their key.
    assert_eq!(server.key_stats("wrong"), KeyStats::default());

    let recorded = server.requests(1, Some("good"));
    assert_eq!(
        recorded[0].headers.get("x-herald-signature"),
        Some(&sign(secret, &body))
    );
}

#[tokio::test]
async fn signatures_are_ignored_without_a_secret() {
    let server = start_default().await;
    let client = reqwest::Client::new();
    let resp = client
        .post(server.hook_url())
        .header("Idempotency-Key", "k")
        .header("X-Herald-Signature", "sha256=00")
        .body(delivery("k", 0, 0))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
}

#[tokio::test]
async fn malformed_requests_get_400() {
    let server = start_default().await;
    let client = reqwest::Client::new();
    let url = server.hook_url();

    let cases = [
        "not json".to_string(),
        json!({"id": "x"}).to_string(),
        json!({
            "id": "x", "kind": "timer", "due_at": "yesterday",
            "fired_at": "2025-01-01T00:00:00.000Z", "attempt": 1,
            "recipient": "u", "message": {},
        })
        .to_string(),
        json!({
            "id": "x", "kind": "timer", "due_at": "2025-01-01T00:00:00.000Z",
            "fired_at": "2025-01-01T00:00:00.000Z", "attempt": "one",
            "recipient": "u", "message": {},
        })
        .to_string(),
    ];
    for (i, body) in cases.into_iter().enumerate() {
        let resp = post(&client, &url, Some(&format!("bad-{i}")), body).await;
        assert_eq!(resp.status().as_u16(), 400, "case {i}");
        let err: Value = resp.json().await.unwrap();
        assert_eq!(err["ok"], false);
    }

    let no_key = post(&client, &url, None, delivery("nk", 0, 0)).await;
    assert_eq!(no_key.status().as_u16(), 400);

    // Extra fields are fine.
    let mut extra: Value = serde_json::from_str(&delivery("e", 0, 0)).unwrap();
    extra["trace"] = json!("abc");
    assert_eq!(
        post(&client, &url, Some("extra"), extra.to_string())
            .await
            .status()
            .as_u16(),
        200
    );

    let stats = server.stats();
    assert_eq!(stats.received, 6);
    assert_eq!(stats.status_count(400), 5);
    assert_eq!(stats.delivered, 1);
    let recent = server.requests(100, None);
    assert_eq!(recent.len(), 6);
    assert_eq!(recent[0].body, json!("not json"));
    assert_eq!(recent[4].key, None);
}

#[tokio::test]
async fn reset_clears_everything() {
    let server = start_default().await;
    let client = reqwest::Client::new();
    for k in ["a", "a", "b"] {
        post_status(&client, &server.hook_url(), k).await;
    }
    assert_eq!(server.stats().received, 3);

    let resp = client
        .post(format!("{}/_mock/reset", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);

    let stats = http_stats(&client, &server).await;
    assert_eq!(stats, WebhookStats::default());
    assert_eq!(server.key_stats("a"), KeyStats::default());
    assert!(server.requests(100, None).is_empty());

    // Recording resumes after a reset, and "a" counts as new again.
    assert_eq!(post_status(&client, &server.hook_url(), "a").await, 200);
    let stats = server.stats();
    assert_eq!(stats.unique_delivered, 1);
    assert_eq!(stats.duplicates, 0);
}

#[tokio::test]
async fn faults_can_be_changed_at_runtime() {
    let server = start_default().await;
    let client = reqwest::Client::new();
    let faults_url = format!("{}/_mock/faults", server.base_url());
    assert_eq!(post_status(&client, &server.hook_url(), "a").await, 200);

    // Partial body: missing fields take their defaults; no content type needed.
    let resp = client
        .post(&faults_url)
        .body(r#"{"permanent_status": 503, "retry_after_secs": 3}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let now: Faults = client
        .get(&faults_url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(now.permanent_status, Some(503));
    assert_eq!(server.faults(), now);

    let resp = post(&client, &server.hook_url(), Some("b"), delivery("b", 0, 0)).await;
    assert_eq!(resp.status().as_u16(), 503);
    assert_eq!(resp.headers()["retry-after"], "3");

    // Invalid faults are refused and leave the current ones alone.
    for bad in [r#"{"error_rate": 2.0}"#, r#"{"fail_frist": 1}"#, "not json"] {
        let resp = client.post(&faults_url).body(bad).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 400, "{bad}");
    }
    assert_eq!(server.faults(), now);

    let resp = client
        .post(&faults_url)
        .json(&Faults::default())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(post_status(&client, &server.hook_url(), "b").await, 200);
}

#[tokio::test]
async fn lateness_is_measured_from_due_at() {
    let server = start_default().await;
    let client = reqwest::Client::new();
    let url = server.hook_url();
    // Ten keys due 1..=10 s ago, each fired 40 ms after due.
    for i in 1..=10 {
        let key = format!("late-{i}");
        let resp = post(&client, &url, Some(&key), delivery(&key, i * 1000, 40)).await;
        assert_eq!(resp.status().as_u16(), 200);
    }
    // A duplicate of a very late key does not count again.
    post(
        &client,
        &url,
        Some("late-1"),
        delivery("late-1", 900_000, 40),
    )
    .await;
    // A delivery due in the future is clamped to zero lateness.
    post(&client, &url, Some("early"), delivery("early", -60_000, 0)).await;

    let stats = server.stats();
    let l = stats.lateness_ms;
    assert_eq!(l.count, 11);
    assert_eq!(l.min, 0);
    // Receipt happens a little after sending; allow generous slack but no less than due.
    assert!((5_000..6_000).contains(&l.p50), "p50 = {}", l.p50);
    assert!((9_000..11_000).contains(&l.p90), "p90 = {}", l.p90);
    assert!((10_000..11_000).contains(&l.max), "max = {}", l.max);
    assert!(l.p99 >= l.p90 && l.p999 >= l.p99 && l.max >= l.p999);

    let f = stats.fire_lateness_ms;
    assert_eq!(f.count, 11);
    assert!((40..=41).contains(&f.p90), "fire p90 = {}", f.p90);
    assert!((40..=41).contains(&f.max), "fire max = {}", f.max);
}

#[tokio::test]
async fn recent_requests_can_be_limited_and_filtered() {
    let server = start_default().await;
    let client = reqwest::Client::new();
    for k in ["a", "b", "a", "c", "a"] {
        post_status(&client, &server.hook_url(), k).await;
    }
    let get = |q: &'static str| {
        let client = client.clone();
        let url = format!("{}/_mock/requests{q}", server.base_url());
        async move {
            client
                .get(url)
                .send()
                .await
                .unwrap()
                .json::<Vec<RecordedRequest>>()
                .await
                .unwrap()
        }
    };
    let keys = |rs: &[RecordedRequest]| -> Vec<String> {
        rs.iter().map(|r| r.key.clone().unwrap()).collect()
    };

    assert_eq!(keys(&get("").await), ["a", "b", "a", "c", "a"]);
    assert_eq!(keys(&get("?limit=2").await), ["c", "a"]);
    let only_a = get("?key=a").await;
    assert_eq!(only_a.len(), 3);
    assert!(only_a.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(get("?key=a&limit=1").await[0].seq, only_a[2].seq);
    assert!(get("?key=zzz").await.is_empty());
}

#[tokio::test]
async fn ring_keeps_only_the_newest_requests() {
    let server = start_default().await;
    let client = reqwest::Client::new();
    let total = herald_mock::RING_CAPACITY + 50;
    for i in 0..total {
        post_status(&client, &server.hook_url(), &format!("k{i}")).await;
    }
    let all = server.requests(usize::MAX, None);
    assert_eq!(all.len(), herald_mock::RING_CAPACITY);
    assert_eq!(all[0].key.as_deref(), Some("k50"));
    assert_eq!(
        all.last().unwrap().key.as_deref(),
        Some(format!("k{}", total - 1).as_str())
    );
    assert_eq!(server.stats().unique_delivered, total as u64);
}

#[tokio::test]
async fn keys_with_slashes_can_be_looked_up() {
    let server = start_default().await;
    let client = reqwest::Client::new();
    post_status(&client, &server.hook_url(), "timer/42:a").await;
    let ks: KeyStats = client
        .get(format!("{}/_mock/keys/timer/42:a", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ks.delivered, 1);
}

#[tokio::test]
async fn concurrent_deliveries_are_all_counted() {
    let server = start_default().await;
    let client = reqwest::Client::new();
    let url = server.hook_url();
    let mut tasks = Vec::new();
    for t in 0..8 {
        let client = client.clone();
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..100 {
                // Every key is sent twice, by different tasks.
                let key = format!("c{}", (t % 4) * 100 + i);
                assert_eq!(post_status(&client, &url, &key).await, 200);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let stats = server.stats();
    assert_eq!(stats.received, 800);
    assert_eq!(stats.delivered, 800);
    assert_eq!(stats.unique_delivered, 400);
    assert_eq!(stats.duplicates, 400);
    assert_eq!(stats.lateness_ms.count, 400);
}

#[tokio::test]
async fn shutdown_stops_serving() {
    let server = start_default().await;
    let client = reqwest::Client::new();
    let url = server.hook_url();
    assert_eq!(post_status(&client, &url, "a").await, 200);
    server.shutdown_and_wait().await;
    let fresh = reqwest::Client::new();
    assert!(fresh.post(&url).body("{}").send().await.is_err());
}
