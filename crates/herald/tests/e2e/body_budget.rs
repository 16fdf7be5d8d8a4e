//! The body budget against one caller that holds bodies open, on the real
//! binary (docs/operations.md, the body budget): a declared length over a route's limit is
//! `413` before anything is read; a body read whole holds the budget for
//! the bytes it sent, not for what it declared; one caller's open streams
//! (bulk requests, audience uploads, signed provider callbacks) hold at most
//! its share, so other callers are still served; and a body that trickles
//! for ever is cut off at its total deadline.

use crate::common;

use std::time::Duration;

use common::{Mock, Server};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const ADMIN: &str = "e2e-body-budget-admin-key-0123456789";
/// Long enough for any answer the server gives at once on this machine.
const ANSWER: Duration = Duration::from_secs(20);

fn addr(s: &Server) -> String {
    s.url.trim_start_matches("http://").to_string()
}

/// A protected node (the admin key set) with `extra` configuration.
async fn protected(extra: &str) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("data").join("herald.db");
    let store = format!("sqlite://{}", db.display());
    Server::start_with_env(&store, dir, extra, &[("HERALD_ADMIN_KEY", ADMIN)]).await
}

/// A new key of `tenant` holding `scopes`; its secret.
async fn key(s: &Server, tenant: &str, scopes: &[&str]) -> String {
    let resp = common::client()
        .post(format!("{}/v1/keys", s.url))
        .bearer_auth(ADMIN)
        .json(&json!({"tenant": tenant, "scopes": scopes, "name": format!("{tenant}-key")}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let v: Value = resp.json().await.unwrap();
    v["key"].as_str().unwrap().to_string()
}

/// `POST /v1/timers` with `key`: the status and the body.
async fn write_timer(s: &Server, key: &str) -> (u16, String) {
    let resp = common::client()
        .post(format!("{}/v1/timers", s.url))
        .bearer_auth(key)
        .json(&json!({"delay_ms": 3_600_000, "channel": "log", "recipient": "v", "message": {}}))
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// Opens a connection and sends `head` (the request line and headers,
/// without the blank line) and then `first` bytes of the body; the
/// connection is left open, the rest of the body never sent.
async fn open_request(addr: &str, head: &str, first: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let mut bytes = format!("{head}\r\n\r\n").into_bytes();
    bytes.extend_from_slice(first);
    stream.write_all(&bytes).await.expect("write");
    stream
}

/// `n` chunked `POST`s to `path` with `key`, each stalled after its
/// `first` chunk.
async fn stalled(
    s: &Server,
    n: usize,
    path: &str,
    key: &str,
    ctype: &str,
    first: &[u8],
) -> Vec<TcpStream> {
    let head = head(
        path,
        &[
            ("Authorization", format!("Bearer {key}")),
            ("Content-Type", ctype.to_string()),
            ("Transfer-Encoding", "chunked".into()),
        ],
    );
    let mut open = Vec::with_capacity(n);
    for _ in 0..n {
        open.push(open_request(&addr(s), &head, first).await);
    }
    open
}

/// Waits until the node's body budget in use (`/metrics`) holds still:
/// the open requests have been taken in and have leased what they hold.
async fn settle(s: &Server) -> u64 {
    let mut last = None;
    for _ in 0..100 {
        let text = common::client()
            .get(format!("{}/metrics", s.url))
            .bearer_auth(ADMIN)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let held = text
            .lines()
            .find_map(|l| l.strip_prefix("herald_api_inflight_body_bytes "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0) as u64;
        if held > 0 && last == Some(held) {
            return held;
        }
        last = Some(held);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    last.unwrap_or(0)
}

/// The request head of a `POST` to `path` with these headers.
fn head(path: &str, headers: &[(&str, String)]) -> String {
    let mut h = format!("POST {path} HTTP/1.1\r\nHost: localhost");
    for (k, v) in headers {
        h.push_str(&format!("\r\n{k}: {v}"));
    }
    h
}

/// The whole answer on `stream` (status line, headers, body) if it starts
/// within `within`; what came if the connection closed or time ran out
/// part-way.
async fn answer(stream: &mut TcpStream, within: Duration) -> Option<String> {
    let deadline = tokio::time::Instant::now() + within;
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => n,
            _ => break,
        };
        got.extend_from_slice(&buf[..n]);
        // An answer with a length: done once it is all here.
        let text = String::from_utf8_lossy(&got);
        if let Some((h, body)) = text.split_once("\r\n\r\n") {
            let len = h
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            if body.len() >= len {
                break;
            }
        }
    }
    (!got.is_empty()).then(|| String::from_utf8_lossy(&got).into_owned())
}

fn status(answer: &str) -> u16 {
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The reproduction: a read-only key declares 256 MiB on
/// `POST /v1/schedules:preview` and sends one byte. That is `413` at once,
/// naming the route's limit, and another tenant's write is served; a
/// chunked body trickling to the same route (no declared length) holds only
/// what it sent, so the write is served meanwhile too.
#[tokio::test]
async fn a_read_only_key_declaring_a_huge_body_does_not_stop_other_tenants() {
    let s = protected("").await;
    let reader = key(&s, "alpha", &["read"]).await;
    let writer = key(&s, "beta", &["write", "read"]).await;
    let bearer = ("Authorization", format!("Bearer {reader}"));
    let json_type = ("Content-Type", "application/json".to_string());
    let mut declared = open_request(
        &addr(&s),
        &head(
            "/v1/schedules:preview",
            &[
                bearer.clone(),
                json_type.clone(),
                ("Content-Length", "268435456".into()),
            ],
        ),
        b"{",
    )
    .await;
    let first = answer(&mut declared, ANSWER)
        .await
        .expect("a declared length over the limit is answered before the body");
    assert_eq!(status(&first), 413, "{first}");
    assert!(first.contains("payload_too_large"), "{first}");
    assert!(
        first.contains("65536"),
        "the answer names the limit: {first}"
    );
    let (st, body) = write_timer(&s, &writer).await;
    assert_eq!(st, 201, "another tenant writes: {body}");

    // No declared length: chunked, one piece, then silence.
    let mut trickle = open_request(
        &addr(&s),
        &head(
            "/v1/schedules:preview",
            &[bearer, json_type, ("Transfer-Encoding", "chunked".into())],
        ),
        b"1\r\n{\r\n",
    )
    .await;
    for _ in 0..3 {
        let (st, body) = write_timer(&s, &writer).await;
        assert_eq!(
            st, 201,
            "another tenant writes while a body trickles: {body}"
        );
    }
    assert!(
        answer(&mut trickle, Duration::from_millis(200))
            .await
            .is_none(),
        "the trickling body is still being read"
    );
}

/// A declared length over a route's own limit is `413` with nothing of the
/// body sent, on a route read whole, a bulk route and the key route.
#[tokio::test]
async fn a_declared_length_over_the_routes_limit_is_refused_before_reading() {
    let s = Server::start("[api]\nmax_timer_bytes = 4096\nbulk_max_bytes = 1048576").await;
    for (path, ctype, length, limit) in [
        ("/v1/timers", "application/json", 4097, "4096"),
        (
            "/v1/timers:bulk",
            "application/x-ndjson",
            1_048_577,
            "1048576",
        ),
        ("/v1/keys", "application/json", 65_537, "65536"),
        ("/v1/jobs/1:cancel", "application/json", 65_537, "65536"),
    ] {
        let mut stream = open_request(
            &addr(&s),
            &head(
                path,
                &[
                    ("Content-Type", ctype.into()),
                    ("Content-Length", length.to_string()),
                ],
            ),
            b"",
        )
        .await;
        let a = answer(&mut stream, ANSWER)
            .await
            .unwrap_or_else(|| panic!("{path}: no answer before the body"));
        assert_eq!(status(&a), 413, "{path}: {a}");
        assert!(a.contains(limit), "{path}: the answer names {limit}: {a}");
    }
}

/// 32 chunked bulk requests of one key, each stalled after its first line,
/// hold that key's share of the budget and no more: the key's later
/// requests are `503 overloaded` with `Retry-After`, and another key (of
/// another tenant) still writes, single and bulk.
#[tokio::test]
async fn stalled_bulk_requests_of_one_key_do_not_block_another_key() {
    let s = protected("").await;
    let greedy = key(&s, "alpha", &["write"]).await;
    let other = key(&s, "beta", &["write"]).await;
    let line = b"{\"delay_ms\":3600000,\"channel\":\"log\",\"recipient\":\"g\",\"message\":{}}\n";
    let mut chunk = format!("{:x}\r\n", line.len()).into_bytes();
    chunk.extend_from_slice(line);
    chunk.extend_from_slice(b"\r\n");
    let mut open = stalled(
        &s,
        32,
        "/v1/timers:bulk",
        &greedy,
        "application/x-ndjson",
        &chunk,
    )
    .await;
    settle(&s).await;
    // The ones past the key's share are refused at once.
    let mut refused = 0;
    for stream in &mut open {
        if let Some(a) = answer(stream, Duration::from_millis(300)).await {
            assert_eq!(status(&a), 503, "{a}");
            assert!(a.to_ascii_lowercase().contains("retry-after: 1"), "{a}");
            refused += 1;
        }
    }
    assert!(
        (1..32).contains(&refused),
        "some, not all, of one key's 32 stalled bulk requests are refused: {refused}"
    );
    let (st, body) = write_timer(&s, &other).await;
    assert_eq!(st, 201, "another key writes: {body}");
    let resp = common::client()
        .post(format!("{}/v1/timers:bulk", s.url))
        .bearer_auth(&other)
        .header("content-type", "application/x-ndjson")
        .body(String::from_utf8_lossy(line).repeat(3))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200, "another key's bulk request");
    drop(open);
}

/// 256 audience uploads of one key held open (1 MiB reserved each) leave
/// the node's budget to others: another key's upload and write are served.
#[tokio::test]
async fn stalled_audience_uploads_of_one_key_do_not_block_another_key() {
    let s = protected("").await;
    let greedy = key(&s, "alpha", &["campaign", "write"]).await;
    let other = key(&s, "beta", &["campaign", "write"]).await;
    let open = stalled(
        &s,
        256,
        "/v1/audiences",
        &greedy,
        "text/csv",
        b"2\r\na\n\r\n",
    )
    .await;
    settle(&s).await;
    let (st, body) = write_timer(&s, &other).await;
    assert_eq!(st, 201, "another key writes: {body}");
    let resp = common::client()
        .post(format!("{}/v1/audiences", s.url))
        .bearer_auth(&other)
        .header("content-type", "text/csv")
        .body("r1\nr2\n")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201, "another key uploads");
    drop(open);
}

/// A body that never stops arriving, a byte at a time well within the
/// pause allowed between pieces, is answered `408` at its total deadline:
/// read whole, streamed (bulk) and uploaded alike.
#[tokio::test]
async fn a_body_trickling_for_ever_is_cut_off_at_its_total_deadline() {
    let s =
        Server::start("[api]\nbody_total_timeout_ms = 1500\nbody_read_timeout_ms = 60000").await;
    for (path, ctype) in [
        ("/v1/timers", "application/json"),
        ("/v1/timers:bulk", "application/x-ndjson"),
        ("/v1/audiences", "text/csv"),
    ] {
        let mut stream = open_request(
            &addr(&s),
            &head(
                path,
                &[
                    ("Content-Type", ctype.into()),
                    ("Transfer-Encoding", "chunked".into()),
                ],
            ),
            b"",
        )
        .await;
        let started = std::time::Instant::now();
        let mut got = None;
        // A byte every 100 ms, for at most a minute.
        while started.elapsed() < Duration::from_secs(60) {
            if stream.write_all(b"1\r\nx\r\n").await.is_err() {
                // Closed after answering: the answer is still to be read.
                got = answer(&mut stream, ANSWER).await;
                break;
            }
            if let Some(a) = answer(&mut stream, Duration::from_millis(100)).await {
                got = Some(a);
                break;
            }
        }
        let a = got.unwrap_or_else(|| panic!("{path}: a trickling body was never cut off"));
        assert_eq!(status(&a), 408, "{path}: {a}");
        assert!(a.contains("body_total_timeout_ms"), "{path}: {a}");
    }
}

/// The signed callback route, which a provider calls without a key, is held
/// the same way, per peer address: a declared length over its limit is
/// `413` before reading, bodies stalled by one peer hold at most its share
/// (a tenant's write is still served), and a trickling body meets the
/// total deadline.
#[tokio::test]
async fn the_signed_callback_route_is_bounded_like_the_others() {
    let mock = Mock::start(&["--wechat-callback-token", "cb-token"]).await;
    let s = protected(&format!(
        "[api]\nmax_inflight_body_bytes = 4194304\nbody_total_timeout_ms = 3000\n\
         [[channels]]\nname = \"wx\"\nkind = \"wechat\"\napi_base = \"{}\"\n\
         appid = \"wxmockappid\"\nsecret = \"mock-wechat-secret\"\ncallback_token = \"cb-token\"\n\
         [[channels]]\nname = \"log\"\nkind = \"log\"\n",
        mock.url
    ))
    .await;
    let writer = key(&s, "beta", &["write"]).await;
    let path = "/v1/channels/wx/callback?signature=x&timestamp=1&nonce=n";
    let xml = ("Content-Type", "text/xml".to_string());

    let mut huge = open_request(
        &addr(&s),
        &head(path, &[xml.clone(), ("Content-Length", "268435456".into())]),
        b"<xml>",
    )
    .await;
    let a = answer(&mut huge, ANSWER)
        .await
        .expect("a declared length over the limit is answered before the body");
    assert_eq!(status(&a), 413, "{a}");
    assert!(a.contains("65536"), "{a}");

    // 80 callbacks of 64 KiB each, stalled 1 KiB short of their end: 5 MiB
    // declared against a 4 MiB budget, from one peer.
    let sent = vec![b'x'; 63 * 1024];
    let mut open = Vec::new();
    for _ in 0..80 {
        open.push(
            open_request(
                &addr(&s),
                &head(path, &[xml.clone(), ("Content-Length", "65536".into())]),
                &sent,
            )
            .await,
        );
    }
    settle(&s).await;
    let (st, body) = write_timer(&s, &writer).await;
    assert_eq!(
        st, 201,
        "a tenant writes while one peer stalls callbacks: {body}"
    );

    // The stalled ones are cut off at the deadline, or were refused at
    // once (a refused one may find its connection reset, its body unread).
    let mut timed_out = 0;
    for stream in &mut open {
        if let Some(a) = answer(stream, ANSWER).await {
            assert!(matches!(status(&a), 408 | 503), "{a}");
            if status(&a) == 408 {
                assert!(a.contains("body_total_timeout_ms"), "{a}");
                timed_out += 1;
            }
        }
    }
    assert!(
        timed_out > 0,
        "the stalled callbacks meet the total deadline"
    );
}
