//! Errors that say how to fix them (issue 41): each mistake a new user
//! makes, made against the real binary, and the answer it gets.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{self, BIN, Server, client, now_ms, rfc3339, wait_for};

/// `herald ARGS` with `env`, to its end: exit success, stdout, stderr.
async fn herald(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(args)
        .env_remove("HERALD_ADMIN_KEY")
        .env_remove("HERALD_CONFIG")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("herald should end by itself")
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `serve` with `toml` as its file in `dir`: it must refuse to start.
async fn refused_serve(dir: &Path, toml: &str) -> String {
    let cfg = dir.join("herald.toml");
    std::fs::write(&cfg, toml).unwrap();
    let (ok, stdout, stderr) = herald(&["serve", "--config", s(&cfg)], &[]).await;
    assert!(!ok, "started: {stdout}\n{stderr}");
    assert!(!stdout.contains("listening"), "{stdout}");
    stderr
}

#[tokio::test]
async fn a_port_in_use_is_named_before_the_store_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let db = dir.path().join("data").join("herald.db");
    let stderr = refused_serve(
        dir.path(),
        &format!(
            "listen = \"{addr}\"\nstore = \"sqlite://{}\"\n",
            db.display()
        ),
    )
    .await;
    assert!(
        stderr.contains(&format!("address {addr} is already in use"))
            && stderr.contains("listen = ")
            && stderr.contains("HERALD_LISTEN"),
        "{stderr}"
    );
    // Nothing was opened, migrated or taken before the refusal.
    assert!(!dir.path().join("data").exists(), "{stderr}");
    assert!(!stderr.contains("shard"), "{stderr}");
    drop(taken);
}

#[tokio::test]
async fn a_misspelt_herald_variable_is_warned_with_the_name_meant() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("data").join("herald.db");
    let s = Server::start_with_env(
        &format!("sqlite://{}", db.display()),
        dir,
        "",
        &[
            ("HERALD_LISTN", "127.0.0.1:9"),
            ("HERALD_ENGINE_WINDOW_MS", "5000"),
            // Read by the tests, not by herald: no warning.
            ("HERALD_REQUIRE_PG", "0"),
        ],
    )
    .await;
    let log = s.log();
    assert!(
        log.contains(
            "the environment variable HERALD_LISTN is not read; did you mean HERALD_LISTEN?"
        ),
        "{log}"
    );
    assert!(
        log.contains("HERALD_ENGINE_WINDOW_MS is not read; did you mean HERALD_ENGINE__WINDOW_MS?"),
        "{log}"
    );
    assert!(!log.contains("HERALD_REQUIRE_PG"), "{log}");
    // `config check` says the same, as warnings: the exit code stays 0.
    let (ok, stdout, stderr) = herald(
        &["config", "check"],
        &[
            ("HERALD_STROE", "sqlite://x.db"),
            ("HERALD_LISTEN", "127.0.0.1:1"),
        ],
    )
    .await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "warning: the environment variable HERALD_STROE is not read; did you mean HERALD_STORE?"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("HERALD_LISTEN "), "{stderr}");
}

#[tokio::test]
async fn a_config_key_typo_names_the_key_and_the_one_meant() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = refused_serve(dir.path(), "lisen = \"127.0.0.1:0\"\n").await;
    let file = dir.path().join("herald.toml");
    assert!(
        stderr.contains(&format!(
            "unknown key \"lisen\" in {}; did you mean \"listen\"?",
            file.display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("default."), "{stderr}");
    assert!(!stderr.contains('`'), "{stderr}");
    // Nested keys are named by their whole path.
    let stderr = refused_serve(dir.path(), "[engine]\nwindow_mss = 5000\n").await;
    assert!(
        stderr.contains("unknown key \"engine.window_mss\"")
            && stderr.contains("did you mean \"engine.window_ms\"?"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_store_path_that_cannot_be_used_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let listen = "listen = \"127.0.0.1:0\"\n";
    // A directory where the database file should be.
    let as_dir = dir.path().join("db-is-a-dir");
    std::fs::create_dir_all(&as_dir).unwrap();
    let stderr = refused_serve(
        dir.path(),
        &format!("{listen}store = \"sqlite://{}\"\n", as_dir.display()),
    )
    .await;
    assert!(
        stderr.contains(&format!("{} is a directory", as_dir.display())),
        "{stderr}"
    );
    assert!(!stderr.contains("unable to open database file"), "{stderr}");
    // A regular file where a directory of the path should be.
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "not a directory").unwrap();
    let stderr = refused_serve(
        dir.path(),
        &format!(
            "{listen}store = \"sqlite://{}/data/herald.db\"\n",
            file.display()
        ),
    )
    .await;
    assert!(
        stderr.contains(&format!("{} is not a directory", file.display())),
        "{stderr}"
    );
    assert!(!stderr.contains("unable to open database file"), "{stderr}");
}

/// A data directory the server may not write in. As root, permissions do
/// not stop it, so the server runs as `nobody` (with `setpriv`); without
/// `setpriv` the case cannot be made as root and is skipped, saying so.
#[tokio::test]
async fn an_unwritable_data_directory_says_permission_denied() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let cfg = dir.path().join("herald.toml");
    std::fs::write(
        &cfg,
        format!(
            "listen = \"127.0.0.1:0\"\nstore = \"sqlite://{}/data/herald.db\"\n",
            locked.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o644)).unwrap();
    // SAFETY: geteuid reads the process's effective user id; no memory is touched.
    let root = unsafe { libc::geteuid() } == 0;
    let (ok, _, stderr) = if root {
        let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
            .into_iter()
            .find(|p| Path::new(p).exists());
        let Some(setpriv) = setpriv else {
            eprintln!("skipped: running as root without setpriv, permissions cannot refuse");
            return;
        };
        let out = tokio::process::Command::new(setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
            .args(["serve", "--config", s(&cfg)])
            .env_remove("HERALD_ADMIN_KEY")
            .output()
            .await
            .unwrap();
        (
            out.status.success(),
            String::new(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    } else {
        herald(&["serve", "--config", s(&cfg)], &[]).await
    };
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains(&format!("permission denied on {}", locked.display())),
        "{stderr}"
    );
    assert!(!stderr.contains("unable to open database file"), "{stderr}");
}

#[tokio::test]
async fn a_backup_into_a_missing_directory_names_that_directory() {
    let server = Server::start("").await;
    let db = server.dir.path().join("data").join("herald.db");
    let store = format!("sqlite://{}", db.display());
    let missing = server.dir.path().join("no-such-dir");
    let to = missing.join("backup.db");
    let (ok, _, stderr) = herald(&["backup", "--store", &store, "--to", s(&to)], &[]).await;
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "its directory {} does not exist; create it first",
            missing.display()
        )),
        "{stderr}"
    );
    // Only the names the user gave: no temporary file of ours.
    assert!(!stderr.contains(".partial-"), "{stderr}");
    // The same command into a directory that exists works.
    std::fs::create_dir(&missing).unwrap();
    let (ok, _, stderr) = herald(&["backup", "--store", &store, "--to", s(&to)], &[]).await;
    assert!(ok && to.is_file(), "{stderr}");
}

#[tokio::test]
async fn a_cron_out_of_range_names_the_field_and_its_range() {
    let server = Server::start("").await;
    for (cron, says) in [
        ("61 * * * *", "minute 61 is out of range 0–59"),
        ("0 24 * * *", "hour 24 is out of range 0–23"),
        ("0 9 * 13 *", "month 13 is out of range 1–12"),
        ("0 9 0 * *", "day-of-month 0 is out of range 1–31"),
    ] {
        let schedule = json!({"type": "cron", "cron": cron, "timezone": "UTC"});
        let (st, v) = server
            .post(
                "/v1/rules",
                &json!({"name": "r", "schedule": schedule, "audience": {"users": ["u"]},
                        "channel": "log", "message": {}}),
            )
            .await;
        assert_eq!(st, 400, "{cron}: {v}");
        assert_eq!(v["error"]["field"], "schedule.cron", "{v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{cron}: {v}");
        assert!(!message.contains("Component error"), "{v}");
        let (st, v) = server
            .post("/v1/schedules:preview", &json!({"schedule": schedule}))
            .await;
        assert_eq!(st, 400, "{cron}: {v}");
        assert_eq!(v["error"]["field"], "schedule.cron", "{v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(says),
            "{v}"
        );
    }
}

#[tokio::test]
async fn a_reminder_on_a_started_subject_says_the_subject_started() {
    let server = Server::start("").await;
    let started = now_ms() - 60_000;
    let (st, v) = server
        .put(
            "/v1/subjects/sale",
            &json!({"start_at": rfc3339(started), "title": "Sale"}),
        )
        .await;
    assert!(st == 200 || st == 201, "{st} {v}");
    let (st, v) = server
        .post(
            "/v1/reminders",
            &json!({"user_id": "u", "subject_id": "sale", "channel_type": "app", "lead_minutes": 5}),
        )
        .await;
    assert_eq!(st, 422, "{v}");
    assert_eq!(v["error"]["field"], "subject_id", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("already started at") && !message.contains("shorter lead_minutes"),
        "{v}"
    );
    // A subject still ahead, but too close for the lead: a shorter one helps.
    let (st, v) = server
        .put(
            "/v1/subjects/soon",
            &json!({"start_at": rfc3339(now_ms() + 120_000), "title": "Soon"}),
        )
        .await;
    assert!(st == 200 || st == 201, "{st} {v}");
    let (st, v) = server
        .post(
            "/v1/reminders",
            &json!({"user_id": "u", "subject_id": "soon", "channel_type": "app", "lead_minutes": 5}),
        )
        .await;
    assert_eq!(st, 422, "{v}");
    assert_eq!(v["error"]["field"], "lead_minutes", "{v}");
}

#[tokio::test]
async fn open_mode_serves_a_request_carrying_a_key() {
    let server = Server::start("").await;
    let timer = json!({"delay_ms": 3_600_000, "channel": "log", "recipient": "r", "message": {}});
    for key in ["Bearer hrk_1_AAAA", "Bearer some-key-of-a-protected-node"] {
        let resp = client()
            .post(format!("{}/v1/timers", server.url))
            .header("authorization", key)
            .json(&timer)
            .send()
            .await
            .unwrap();
        let st = resp.status().as_u16();
        let v: Value = resp.json().await.unwrap();
        assert_eq!(st, 201, "{key}: {v}");
    }
    assert_eq!(server.total_timers().await, 2);
    let log = server.log();
    assert!(
        log.contains("an API key sent with one is not checked"),
        "{log}"
    );
    assert_eq!(log.matches("open mode checks no keys").count(), 1, "{log}");
}

#[tokio::test]
async fn malformed_json_names_no_question_mark_field() {
    let server = Server::start("").await;
    let url = format!("{}/v1/timers", server.url);
    for body in [
        r#"{"channel": "log","#,
        r#"{"channel" "log"}"#,
        r#"{"channel": "log", "recipient": tru}"#,
        "{\"channel\": \"log\",\n \"message\": {\"a\": }}",
    ] {
        let (st, v) = common::post_raw(&url, "application/json", body.to_string()).await;
        assert_eq!(st, 400, "{body}: {v}");
        assert_eq!(v["error"]["code"], "malformed_json", "{body}: {v}");
        let field = &v["error"]["field"];
        assert!(
            field.as_str().is_some_and(|f| !f.contains('?')),
            "{body}: {v}"
        );
        assert!(
            v["error"]["message"].as_str().unwrap().contains("line "),
            "{body}: {v}"
        );
    }
    // A syntax error inside a value names that value.
    let (_, v) = common::post_raw(
        &url,
        "application/json",
        r#"{"channel": "log", "recipient": tru}"#.into(),
    )
    .await;
    assert_eq!(v["error"]["field"], "recipient", "{v}");
}

#[tokio::test]
async fn the_log_channel_logs_a_job_send_by_job_and_recipient() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("data").join("herald.db");
    let server = Server::start_with_env(
        &format!("sqlite://{}", db.display()),
        dir,
        "[jobs]\nplanner_interval_ms = 200\nidle_poll_ms = 100\n",
        &[("RUST_LOG", "info")],
    )
    .await;
    let (st, v) = server
        .post(
            "/v1/jobs",
            &json!({"users": ["alice", "bob"], "channel": "log", "message": {"text": "hi"}}),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    let id = v["id"].as_i64().unwrap();
    wait_for("both sends logged", Duration::from_secs(30), || async {
        let log = server.log();
        log.contains("recipient=alice") && log.contains("recipient=bob")
    })
    .await;
    let log = server.log();
    let sends: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("herald::delivery") && l.contains("delivered"))
        .collect();
    assert_eq!(sends.len(), 2, "{log}");
    for line in sends {
        assert!(line.contains(&format!("job_id={id}")), "{line}");
        assert!(!line.contains("timer_id"), "{line}");
    }
}

#[tokio::test]
async fn config_check_lists_every_problem_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("herald.toml");
    std::fs::write(
        &cfg,
        "lisen = \"127.0.0.1:0\"\n[engine]\nwindow_mss = 1\n[tenants.shop]\nmax_pendng = 1\n",
    )
    .unwrap();
    let (ok, stdout, stderr) = herald(&["config", "check", "--config", s(&cfg)], &[]).await;
    assert!(!ok, "{stdout}\n{stderr}");
    for says in [
        "unknown key \"lisen\"",
        "did you mean \"listen\"?",
        "unknown key \"engine.window_mss\"",
        "unknown key \"tenants.shop.max_pendng\"",
        "did you mean \"tenants.shop.max_pending\"?",
        "3 problems",
    ] {
        assert!(stderr.contains(says), "{says}: {stderr}");
    }
    // Checks of values are all made too, and what serve refuses at start.
    std::fs::write(
        &cfg,
        "listen = \"0.0.0.0:8780\"\nshards = 0\n[jobs]\nsegment_size = 0\n",
    )
    .unwrap();
    let (ok, _, stderr) = herald(&["config", "check", "--config", s(&cfg)], &[]).await;
    assert!(!ok, "{stderr}");
    for says in [
        "shards must be at least 1",
        "jobs.segment_size must be 1..=100000",
        "refusing to serve 0.0.0.0:8780 without an admin key",
        "3 problems",
    ] {
        assert!(stderr.contains(says), "{says}: {stderr}");
    }
    // Once the rest reads, each channel is checked as building it would:
    // a robot's webhook without its token, a secret whose variable is unset.
    std::fs::write(
        &cfg,
        "listen = \"127.0.0.1:8780\"\n\
         [[channels]]\nname = \"ops\"\nkind = \"feishu_bot\"\n\
         webhook = \"https://open.feishu.cn/open-apis/bot/v2/hook/\"\n\
         [[channels]]\nname = \"hooks\"\nkind = \"webhook\"\nurl = \"http://127.0.0.1:9/\"\n\
         secret_env = \"HERALD_TEST_SURELY_UNSET_VAR\"\n",
    )
    .unwrap();
    let (ok, _, stderr) = herald(&["config", "check", "--config", s(&cfg)], &[]).await;
    assert!(!ok, "{stderr}");
    for says in [
        "channel \"ops\": webhook: its path or key is not a robot's",
        "channel \"hooks\": secret_env: environment variable HERALD_TEST_SURELY_UNSET_VAR is not set",
        "2 problems",
    ] {
        assert!(stderr.contains(says), "{says}: {stderr}");
    }
    // A good file: exit 0, and nothing was opened.
    let db = dir.path().join("data").join("herald.db");
    std::fs::write(
        &cfg,
        format!(
            "listen = \"127.0.0.1:8780\"\nstore = \"sqlite://{}\"\n",
            db.display()
        ),
    )
    .unwrap();
    let (ok, stdout, stderr) = herald(&["config", "check", "--config", s(&cfg)], &[]).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("valid"), "{stdout}");
    assert!(!dir.path().join("data").exists());
}
