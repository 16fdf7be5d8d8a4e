//! Logs written to a file or a pipe are plain text: no ANSI colour codes.
//! The real `herald serve` runs with its stderr redirected, fires a timer
//! on the `log` channel, and stops; its log must hold the expected lines and
//! no ESC byte.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::{BIN, Server, client, wait_for};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

const ESC: u8 = 0x1b;

/// Schedules one timer on the embedded `log` channel and waits until it is `done`.
async fn fire_one(url: &str, recipient: &str) {
    let http = client();
    let r = http
        .post(format!("{url}/v1/timers"))
        .json(
            &json!({"delay_ms": 0, "channel": "log", "recipient": recipient,
            "message": {"hello": "logs"}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let id = r.json::<serde_json::Value>().await.unwrap()["id"]
        .as_i64()
        .unwrap();
    wait_for("the timer to be done", Duration::from_secs(30), || {
        let http = http.clone();
        let url = format!("{url}/v1/timers/{id}");
        async move {
            let t: serde_json::Value = http.get(url).send().await.unwrap().json().await.unwrap();
            t["state"] == "done"
        }
    })
    .await;
}

fn assert_plain(log: &str, recipient: &str) {
    assert!(
        !log.as_bytes().contains(&ESC),
        "the log holds an ANSI escape:\n{log:?}"
    );
    // Field names and values side by side prove no colour code sits between them.
    for want in [
        "herald serving",
        "delivered",
        "channel=log",
        &format!("recipient={recipient}"),
        "stopping: draining in-flight deliveries",
        "stopped",
    ] {
        assert!(log.contains(want), "the log lacks {want:?}:\n{log}");
    }
}

#[tokio::test]
async fn logs_to_a_file_carry_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("data").join("herald.db");
    // No channels configured: the embedded `log` channel, which logs each delivery.
    let mut server = Server::start_with_env(
        &format!("sqlite://{}", db.display()),
        dir,
        "",
        &[("RUST_LOG", "info")],
    )
    .await;
    fire_one(&server.url, "file-reader").await;
    server.terminate().await;
    assert_plain(&server.log(), "file-reader");
}

#[tokio::test]
async fn logs_to_a_pipe_carry_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .arg("serve")
        .current_dir(dir.path())
        .env_remove("HERALD_CONFIG")
        .env_remove("NO_COLOR")
        .env("HERALD_LISTEN", "127.0.0.1:0")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Read stderr to the end in the background, so the pipe never fills.
    let mut stderr = child.stderr.take().unwrap();
    let log = tokio::spawn(async move {
        let mut buf = Vec::new();
        stderr.read_to_end(&mut buf).await.unwrap();
        buf
    });
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("herald serve starts")
        .unwrap()
        .expect("a listening line");
    let url = line
        .strip_prefix("herald listening on ")
        .expect("the listening line")
        .to_string();

    fire_one(&url, "pipe-reader").await;

    let pid = child.id().expect("pid").to_string();
    let st = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(st.success());
    let exit = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("exits")
        .unwrap();
    assert!(exit.success(), "graceful exit: {exit:?}");
    let log = tokio::time::timeout(Duration::from_secs(10), log)
        .await
        .expect("stderr closes")
        .unwrap();
    assert_plain(&String::from_utf8_lossy(&log), "pipe-reader");
}
