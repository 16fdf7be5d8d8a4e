//! The subscriber directory against the real binary, on both stores:
//! `herald subscribers import` (with its tally, re-run safely), `get`, `put`,
//! `list` and `rm`, and the HTTP answers behind them.

mod common;

use std::process::Stdio;

use common::{BIN, Server, pg_database};
use serde_json::{Value, json};

/// Runs `herald subscribers ARGS --server URL`: exit success, stdout, stderr.
async fn cli(server: &str, args: &[&str]) -> (bool, String, String) {
    let out = tokio::process::Command::new(BIN)
        .arg("subscribers")
        .args(args)
        .args(["--server", server])
        .env_remove("HERALD_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn scenario(s: &Server) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users.ndjson");
    let mut lines: Vec<String> = (0..250)
        .map(|i| {
            json!({"user_id": format!("user-{i:03}"), "timezone": "Asia/Shanghai",
                   "addresses": {"email": format!("user+{i}@example.com"),
                                 "app": [format!("token-{i}-a"), format!("token-{i}-b")]}})
            .to_string()
        })
        .collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let path = file.to_str().unwrap();

    // In batches of 100: every line created; again: every line replaced.
    let (ok, out, err) = cli(&s.url, &["import", path, "--batch", "100"]).await;
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("created 250, replaced 0, failed 0"), "{out}");
    let (ok, out, err) = cli(&s.url, &["import", path, "--batch", "100"]).await;
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("created 0, replaced 250, failed 0"), "{out}");

    // A bad line fails alone, is reported with its field, and the exit says so.
    lines.push(json!({"user_id": "user-bad", "addresses": {"sms": "12345"}}).to_string());
    lines.push(json!({"user_id": "user-new", "locale": "en"}).to_string());
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let (ok, out, _) = cli(&s.url, &["import", path]).await;
    assert!(!ok, "a failed line must fail the import: {out}");
    assert!(out.contains("created 1, replaced 250, failed 1"), "{out}");
    assert!(out.contains("addresses.sms"), "{out}");

    let (ok, out, err) = cli(&s.url, &["get", "user-007"]).await;
    assert!(ok, "{err}");
    let got: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(got["addresses"]["email"], "user+7@example.com");
    assert_eq!(got["version"], 3, "imported three times");
    let (ok, out, _) = cli(&s.url, &["get", "user-bad"]).await;
    assert!(!ok, "{out}");

    let (ok, _, err) = cli(
        &s.url,
        &[
            "put",
            "user-007",
            "--profile",
            r#"{"addresses":{"email":"seven@example.com"}}"#,
        ],
    )
    .await;
    assert!(ok, "{err}");
    let (_, out, _) = cli(&s.url, &["list", "--limit", "2", "--cursor", "user-006"]).await;
    let page: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(page["subscribers"][0]["user_id"], "user-007", "{page}");
    assert_eq!(
        page["subscribers"][0]["addresses"]["email"],
        "seven@example.com"
    );
    assert!(
        page["subscribers"][0]["addresses"].get("app").is_none(),
        "{page}"
    );
    assert_eq!(page["next_cursor"], "user-008", "{page}");

    let (ok, _, err) = cli(&s.url, &["rm", "user-007"]).await;
    assert!(ok, "{err}");
    let (ok, _, _) = cli(&s.url, &["rm", "user-007"]).await;
    assert!(!ok, "a second rm finds nothing");
}

#[tokio::test]
async fn the_directory_imports_and_serves_on_sqlite() {
    let s = Server::start("").await;
    scenario(&s).await;
}

#[tokio::test]
async fn the_directory_imports_and_serves_on_postgres() {
    let Some((_db, url)) = pg_database("subscribers") else {
        eprintln!("PostgreSQL not installed: directory test on PostgreSQL skipped");
        return;
    };
    let s = Server::start_on(&url, tempfile::tempdir().unwrap(), "").await;
    scenario(&s).await;
}
