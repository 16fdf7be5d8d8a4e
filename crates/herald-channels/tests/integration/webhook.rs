//! The webhook channel against real HTTP peers on loopback.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use herald_channels::{
    ChannelConfig, Delivery, ProviderConfig, SecretSource, SendOutcome, WebhookChannel,
    WebhookConfig, build,
};
use herald_core::TimerKind;
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Default)]
struct Seen {
    peers: HashSet<SocketAddr>,
    bodies: Vec<(HeaderMap, String)>,
}

/// A receiver whose answer depends on the recipient: `status-NNN`, `slow`,
/// `close` (answers with `Connection: close`), anything else 200.
async fn receiver() -> (String, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let s2 = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        post(
            move |ConnectInfo(peer): ConnectInfo<SocketAddr>, headers: HeaderMap, body: String| {
                let seen = s2.clone();
                async move {
                    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
                    let recipient = v["recipient"].as_str().unwrap_or("").to_string();
                    {
                        let mut s = seen.lock();
                        s.peers.insert(peer);
                        s.bodies.push((headers, body));
                    }
                    if recipient == "slow" {
                        tokio::time::sleep(Duration::from_millis(600)).await;
                    }
                    if recipient == "close" {
                        return (StatusCode::OK, [("connection", "close")], "bye").into_response();
                    }
                    if recipient == "retry-after" {
                        return (
                            StatusCode::TOO_MANY_REQUESTS,
                            [("retry-after", "7")],
                            "slow down",
                        )
                            .into_response();
                    }
                    if let Some(code) = recipient.strip_prefix("status-") {
                        let code = StatusCode::from_u16(code.parse().unwrap()).unwrap();
                        return (code, "nope").into_response();
                    }
                    (StatusCode::OK, "ok").into_response()
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    (format!("http://{addr}/hook"), seen)
}

fn delivery(recipient: &str, key: &str) -> Delivery {
    Delivery {
        timer_id: 7,
        kind: TimerKind::Timer,
        due_at: 1_795_000_000_000,
        fired_at: 1_795_000_000_002,
        attempt: 1,
        recipient: recipient.into(),
        message: r#"{"hello":"world"}"#.into(),
        idempotency_key: key.into(),
        traceparent: None,
    }
}

fn channel(url: &str, f: impl FnOnce(&mut WebhookConfig)) -> Arc<dyn herald_channels::Channel> {
    let mut hook = WebhookConfig::new(url);
    f(&mut hook);
    let mut cfg = ChannelConfig::new("hooks", ProviderConfig::Webhook(hook));
    cfg.common.timeout_ms = 300;
    build(&cfg, &herald_channels::BuildContext::local()).unwrap()
}

#[tokio::test]
async fn delivers_with_headers_signature_and_reuses_the_connection() {
    let (url, seen) = receiver().await;
    let ch = channel(&url, |c| {
        c.secret = Some(SecretSource::Inline("k3y".into()))
    });
    for i in 0..20 {
        let out = ch.send(&delivery("u", &format!("key-{i}"))).await;
        assert_eq!(
            out,
            SendOutcome::Delivered {
                provider_msgid: None,
                status: Some(200)
            }
        );
    }
    let s = seen.lock();
    assert_eq!(
        s.peers.len(),
        1,
        "sequential deliveries should share one kept-alive connection"
    );
    let (headers, body) = &s.bodies[3];
    assert_eq!(headers["idempotency-key"], "key-3");
    assert_eq!(headers["content-type"], "application/json");
    // `t=<unix>,v1=<hmac of "t.body">`, signed just now.
    let sent = headers["x-herald-signature"].to_str().unwrap();
    let t: i64 = sent
        .strip_prefix("t=")
        .and_then(|r| r.split_once(','))
        .and_then(|(t, _)| t.parse().ok())
        .unwrap_or_else(|| panic!("not t=..,v1=..: {sent}"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((now - t).abs() <= 60, "{t} vs {now}");
    let expected = WebhookChannel::signature(b"k3y", t, body.as_bytes());
    assert_eq!(sent, expected.as_str());
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["message"]["hello"], "world");
    assert_eq!(v["due_at"], "2026-11-18T11:06:40.000Z");
}

#[tokio::test]
async fn classifies_answers() {
    let (url, _seen) = receiver().await;
    let ch = channel(&url, |_| {});
    let d = |r: &str| delivery(r, "k");
    assert!(matches!(
        ch.send(&d("status-503")).await,
        SendOutcome::Retryable {
            status: Some(503),
            ..
        }
    ));
    assert!(matches!(
        ch.send(&d("status-500")).await,
        SendOutcome::Retryable {
            status: Some(500),
            ..
        }
    ));
    assert!(matches!(
        ch.send(&d("status-408")).await,
        SendOutcome::Retryable {
            status: Some(408),
            ..
        }
    ));
    assert!(matches!(
        ch.send(&d("retry-after")).await,
        SendOutcome::Retryable {
            status: Some(429),
            retry_after_ms: Some(7000),
            ..
        }
    ));
    match ch.send(&d("status-400")).await {
        SendOutcome::Permanent {
            status: Some(400),
            error,
        } => assert!(error.contains("nope"), "{error}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        ch.send(&d("status-404")).await,
        SendOutcome::Permanent {
            status: Some(404),
            ..
        }
    ));
    assert!(matches!(
        ch.send(&d("status-301")).await,
        SendOutcome::Permanent {
            status: Some(301),
            ..
        }
    ));
    assert!(matches!(
        ch.send(&d("status-204")).await,
        SendOutcome::Delivered {
            status: Some(204),
            ..
        }
    ));
    // Slower than the 300 ms timeout.
    match ch.send(&d("slow")).await {
        SendOutcome::Retryable {
            error,
            status: None,
            ..
        } => assert!(error.contains("timeout"), "{error}"),
        other => panic!("{other:?}"),
    }
    // And the channel still works afterwards.
    assert!(matches!(
        ch.send(&d("u")).await,
        SendOutcome::Delivered { .. }
    ));
}

#[tokio::test]
async fn reconnects_when_the_receiver_closes_connections() {
    let (url, seen) = receiver().await;
    let ch = channel(&url, |_| {});
    for _ in 0..5 {
        assert!(matches!(
            ch.send(&delivery("close", "k")).await,
            SendOutcome::Delivered { .. }
        ));
    }
    assert_eq!(
        seen.lock().peers.len(),
        5,
        "each closed connection is replaced"
    );
}

#[tokio::test]
async fn unreachable_receiver_is_retryable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let ch = channel(&format!("http://{addr}/hook"), |_| {});
    match ch.send(&delivery("u", "k")).await {
        SendOutcome::Retryable { error, .. } => assert!(error.contains("connect"), "{error}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn https_with_a_private_ca() {
    use tokio_rustls::rustls;
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, cert.cert.pem()).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::try_from(cert.signing_key.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server_cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_cfg));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let got = Arc::new(Mutex::new(Vec::<String>::new()));
    let got2 = got.clone();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            let got = got2.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                // A minimal HTTP/1.1 peer: read one request, answer 200.
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let n = tls.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let len: usize = text
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse().unwrap())
                            })
                            .unwrap_or(0);
                        if buf.len() >= end + 4 + len {
                            got.lock().push(text);
                            let _ = tls
                                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                                .await;
                            return;
                        }
                    }
                }
            });
        }
    });
    let url = format!("https://localhost:{port}/hook");
    let trusted = channel(&url, |c| c.ca_file = Some(ca.display().to_string()));
    assert!(matches!(
        trusted.send(&delivery("u", "tls-1")).await,
        SendOutcome::Delivered { .. }
    ));
    assert!(got.lock()[0].contains("idempotency-key: tls-1"));
    // Without the CA the certificate is not trusted: no delivery.
    let untrusted = channel(&url, |_| {});
    match untrusted.send(&delivery("u", "tls-2")).await {
        SendOutcome::Retryable { error, .. } => assert!(error.contains("TLS"), "{error}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(got.lock().len(), 1);
    // A ca_file that is not PEM is a configuration error.
    std::fs::write(&ca, "garbage").unwrap();
    let mut hook = WebhookConfig::new(&url);
    hook.ca_file = Some(ca.display().to_string());
    let cfg = ChannelConfig::new("h", ProviderConfig::Webhook(hook));
    assert!(build(&cfg, &herald_channels::BuildContext::local()).is_err());
}

/// The fenced block after `marker` in docs/channels.md.
fn documented(marker: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/channels.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let after = &doc[doc
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} in {path}"))..];
    let start = after.find("```").unwrap();
    let body = &after[start..];
    let code_start = body.find('\n').unwrap() + 1;
    let code_end = body[code_start..].find("```").unwrap() + code_start;
    body[code_start..code_end].to_string()
}

/// Runs `program` on a script; `None` when the interpreter is missing.
fn run(program: &str, script: &str, args: &[&str]) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("verify");
    std::fs::write(&file, script).unwrap();
    let out = std::process::Command::new(program)
        .arg(&file)
        .args(args)
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "{program}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The verification examples of docs/channels.md accept what Herald signs,
/// and refuse a changed body, another secret and an old timestamp.
#[test]
fn documented_verifiers_accept_herald_signatures() {
    let secret = "whsec-docs";
    let body = r#"{"id":7,"message":{"text":"héllo"}}"#;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let good = WebhookChannel::signature(secret.as_bytes(), now, body.as_bytes());
    let old = WebhookChannel::signature(secret.as_bytes(), now - 600, body.as_bytes());
    let cases = [
        (secret, good.as_str(), body, "yes"),
        (secret, good.as_str(), r#"{"id":8}"#, "no"),
        ("other", good.as_str(), body, "no"),
        (secret, old.as_str(), body, "no"),
        (secret, "v1=00", body, "no"),
        (secret, "t=1,v1=zz,junk", body, "no"),
    ];
    let python = format!(
        "{}\nimport sys\nprint('yes' if verify(sys.argv[1].encode(), sys.argv[2], sys.argv[3].encode()) else 'no')\n",
        documented("<!-- verify-webhook-python -->")
    );
    let node = format!(
        "{}\nconst [s, h, b] = process.argv.slice(2);\nconsole.log(verify(s, h, Buffer.from(b)) ? 'yes' : 'no');\n",
        documented("<!-- verify-webhook-node -->")
    );
    for (program, script) in [("python3", &python), ("node", &node)] {
        for (s, header, b, want) in cases {
            match run(program, script, &[s, header, b]) {
                Some(got) => assert_eq!(got, want, "{program} {s} {header} {b}"),
                None => {
                    eprintln!("{program} not found: its example is not checked");
                    break;
                }
            }
        }
    }
}
