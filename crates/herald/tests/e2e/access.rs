//! Access control of the real binary: which addresses a node serves without
//! a key, what open mode refuses from a browser, and protected mode with
//! the admin key.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::{BIN, Server, client};
use serde_json::{Value, json};

const ADMIN: &str = "e2e-admin-key-0123456789abcdef";

/// `herald serve` with `config` and `env` must exit non-zero without
/// listening; its stderr.
async fn refused_start(config: &str, env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("herald.toml");
    let db = dir.path().join("herald.db");
    std::fs::write(
        &path,
        format!("store = \"sqlite://{}\"\n{config}\n", db.display()),
    )
    .unwrap();
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(["serve", "--config", path.to_str().unwrap()])
        .env_remove("HERALD_ADMIN_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("herald serve should exit at once")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "started: {stdout}\n{stderr}");
    assert!(!stdout.contains("listening"), "{stdout}");
    assert!(
        !db.exists(),
        "the store was opened before the refusal: {stderr}"
    );
    stderr
}

#[tokio::test]
async fn a_public_address_without_an_admin_key_does_not_start() {
    let stderr = refused_start("listen = \"0.0.0.0:0\"", &[]).await;
    assert!(
        stderr.contains("refusing to serve 0.0.0.0:0 without an admin key")
            && stderr.contains("export HERALD_ADMIN_KEY="),
        "{stderr}"
    );
    // The message names the variable the config names.
    let stderr = refused_start(
        "listen = \"[::]:0\"\n[auth]\nadmin_key_env = \"SHOP_HERALD_KEY\"",
        &[("HERALD_ADMIN_KEY", ADMIN)],
    )
    .await;
    assert!(stderr.contains("export SHOP_HERALD_KEY="), "{stderr}");
    // A key too short to be a secret.
    let stderr = refused_start("listen = \"0.0.0.0:0\"", &[("HERALD_ADMIN_KEY", "hunter2")]).await;
    assert!(
        stderr.contains("too short") && !stderr.contains("hunter2"),
        "{stderr}"
    );
    // A key in the file is refused, and not repeated.
    let stderr = refused_start(
        "listen = \"127.0.0.1:0\"\n[auth]\nadmin_key = \"in-the-file-0123456789\"",
        &[],
    )
    .await;
    assert!(
        stderr.contains("auth.admin_key is not accepted") && !stderr.contains("in-the-file"),
        "{stderr}"
    );
}

/// A request to `path` on `s` with these headers and an optional body.
async fn send(
    s: &Server,
    method: reqwest::Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<(&str, String)>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let url = format!("{}{path}", s.url);
    common::exchange(&client(), method, &url, headers, body).await
}

fn timer() -> String {
    json!({"delay_ms": 3_600_000, "channel": "log", "recipient": "r", "message": {}}).to_string()
}

#[tokio::test]
async fn open_mode_on_loopback_needs_no_key_and_refuses_browser_tricks() {
    use reqwest::Method;
    let s = Server::start("").await;
    assert!(s.log().contains("open mode"), "{}", s.log());
    let (st, _, v) = send(
        &s,
        Method::POST,
        "/v1/timers",
        &[],
        Some(("application/json", timer())),
    )
    .await;
    assert_eq!(st, 201, "{v}");
    let (st, _, v) = send(&s, Method::GET, "/readyz", &[], None).await;
    assert_eq!((st, v), (200, json!({"status": "ready"})));
    // A page's cross-origin "simple" request: JSON sent as text/plain.
    let (st, _, v) = send(
        &s,
        Method::POST,
        "/v1/timers",
        &[],
        Some(("text/plain", timer())),
    )
    .await;
    assert_eq!(st, 415, "{v}");
    assert_eq!(v["error"]["code"], "unsupported_media_type");
    // DNS rebinding: the browser names the attacker's host.
    let (st, _, v) = send(
        &s,
        Method::GET,
        "/v1/timers/1",
        &[("host", "rebind.evil.example")],
        None,
    )
    .await;
    assert_eq!(st, 421, "{v}");
    assert_eq!(v["error"]["code"], "misdirected_request");
    // Nothing the refused requests carried was written.
    assert_eq!(s.total_timers().await, 1);
}

#[tokio::test]
async fn protected_mode_needs_the_admin_key() {
    use reqwest::Method;
    let s = Server::start_on_address("0.0.0.0:0", "", &[("HERALD_ADMIN_KEY", ADMIN)]).await;
    let admin = format!("Bearer {ADMIN}");
    for path in ["/healthz", "/readyz"] {
        let (st, _, v) = send(&s, Method::GET, path, &[], None).await;
        assert_eq!(st, 200, "{path}: {v}");
    }
    let (st, headers, v) = send(&s, Method::GET, "/v1/stats", &[], None).await;
    assert_eq!(st, 401, "{v}");
    assert_eq!(v["error"]["code"], "unauthorized");
    assert!(
        headers["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer"),
        "{headers:?}"
    );
    for auth in ["Bearer wrong-key-0123456789abcdef", "Bearer hrk_1_AAAA"] {
        let (st, _, v) = send(
            &s,
            Method::POST,
            "/v1/timers",
            &[("authorization", auth)],
            Some(("application/json", timer())),
        )
        .await;
        assert_eq!(st, 401, "{auth}: {v}");
    }
    let (st, _, v) = send(
        &s,
        Method::POST,
        "/v1/timers",
        &[("authorization", &admin)],
        Some(("application/json", timer())),
    )
    .await;
    assert_eq!(st, 201, "{v}");
    let id = v["id"].as_i64().unwrap();
    let (st, _, stats) = send(
        &s,
        Method::GET,
        "/v1/stats",
        &[("authorization", &admin)],
        None,
    )
    .await;
    assert_eq!(st, 200);
    assert_eq!(
        stats["timers"]["pending"], 1,
        "only the admin's timer: {stats}"
    );
    // The CLI sends the key from --key or HERALD_KEY.
    let cli = |key: Option<&str>| {
        let mut cmd = std::process::Command::new(BIN);
        cmd.args(["timers", "get", &id.to_string(), "--server", &s.url])
            .env_remove("HERALD_KEY");
        if let Some(k) = key {
            cmd.env("HERALD_KEY", k);
        }
        cmd.output().unwrap()
    };
    let out = cli(Some(ADMIN));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"pending\""));
    let out = cli(None);
    assert!(!out.status.success());
    // Once, on stderr: nothing on stdout.
    assert!(
        out.stdout.is_empty() && String::from_utf8_lossy(&out.stderr).contains("401 unauthorized"),
        "{out:?}"
    );
}
