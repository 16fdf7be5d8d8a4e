//! `herald serve` with no configuration file: the embedded default, and the
//! `HERALD_*` environment overrides.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_herald");

async fn start(cwd: &std::path::Path, env: &[(&str, &str)]) -> (tokio::process::Child, String) {
    let mut cmd = Command::new(BIN);
    cmd.arg("serve")
        .current_dir(cwd)
        .env_remove("HERALD_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let url = line
        .strip_prefix("herald listening on ")
        .unwrap()
        .to_string();
    (child, url)
}

#[tokio::test]
async fn no_config_runs_on_embedded_sqlite_with_a_log_channel() {
    let cwd = tempfile::tempdir().unwrap();
    // Only the port is overridden, so parallel tests do not collide on 8780.
    let (_child, url) = start(cwd.path(), &[("HERALD_LISTEN", "127.0.0.1:0")]).await;
    assert!(
        cwd.path().join("herald-data").join("herald.db").exists(),
        "store not in ./herald-data/"
    );
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{url}/v1/timers"))
        .json(&json!({"delay_ms": 0, "channel": "log", "recipient": "u", "message": {"hi": 1}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let id = r.json::<serde_json::Value>().await.unwrap()["id"]
        .as_i64()
        .unwrap();
    let mut state = String::new();
    for _ in 0..100 {
        let t: serde_json::Value = http
            .get(format!("{url}/v1/timers/{id}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        state = t["state"].as_str().unwrap().to_string();
        if state == "done" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(state, "done");
}

#[tokio::test]
async fn herald_store_overrides_the_default_path() {
    let cwd = tempfile::tempdir().unwrap();
    let db = cwd.path().join("elsewhere").join("h.db");
    let store = format!("sqlite://{}", db.display());
    let (_child, _url) = start(
        cwd.path(),
        &[("HERALD_LISTEN", "127.0.0.1:0"), ("HERALD_STORE", &store)],
    )
    .await;
    assert!(db.exists());
    assert!(!cwd.path().join("herald-data").exists());
}

#[tokio::test]
async fn a_bad_config_is_a_clear_error() {
    let cwd = tempfile::tempdir().unwrap();
    let cfg = cwd.path().join("h.toml");
    std::fs::write(
        &cfg,
        "[[channels]]\nname = \"x\"\nkind = \"webhook\"\nurl = \"ftp://nope\"\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--config", cfg.to_str().unwrap()])
        .current_dir(cwd.path())
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("url"), "{err}");
    let out = Command::new(BIN)
        .args(["serve"])
        .env("HERALD_STORE", "mysql://x")
        .current_dir(cwd.path())
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unsupported store url"));
}

/// `herald version` names the commit the binary was built from: the
/// checkout's, when the tests run in one.
#[tokio::test]
async fn version_names_the_commit_it_was_built_from() {
    let out = Command::new(BIN).arg("version").output().await.unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    // The first line, which scripts read; the commit and features follow.
    let commit = text
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .strip_prefix(&format!("herald {version} (commit "))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("not `herald {version} (commit …)`: {text}"));
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match head {
        Some(head) if std::env::var("HERALD_COMMIT").is_err() => assert_eq!(commit, head),
        _ => assert!(!commit.is_empty()),
    }
    assert!(text.contains(&format!("\ncommit: {commit}\n")), "{text}");
    // `--version` says the same.
    let flag = Command::new(BIN).arg("--version").output().await.unwrap();
    assert_eq!(String::from_utf8(flag.stdout).unwrap(), text);
}
