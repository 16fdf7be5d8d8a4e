//! `herald backup` of a store that `herald serve` is writing, and `herald
//! restore` of it into a new data directory that a second server serves; and
//! what both refuse.

use crate::common;

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;

/// Runs `herald <args>` to its end: success, stdout, stderr.
async fn herald(args: &[&str]) -> (bool, String, String) {
    let out = tokio::process::Command::new(BIN)
        .args(args)
        .env_remove("HERALD_CONFIG")
        .env_remove("HERALD_STORE")
        .env("RUST_LOG", "warn")
        .output()
        .await
        .expect("run herald");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Timer ids the store holds, read straight from the database file.
fn stored_ids(db: &Path) -> HashSet<i64> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut stmt = conn.prepare("SELECT id FROM timers").unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// Bulk-creates far-future timers until told to stop and at least `min`
/// were acknowledged; each acknowledged id goes into `acked` as its answer
/// arrives.
async fn create_until(
    url: String,
    acked: Arc<Mutex<Vec<i64>>>,
    stop: Arc<AtomicBool>,
    min: usize,
) -> usize {
    let due = rfc3339(now_ms() + 86_400_000);
    let mut batch = 0;
    loop {
        let done = acked.lock().unwrap().len();
        if done >= min && stop.load(Ordering::Relaxed) {
            return done;
        }
        let mut lines = String::new();
        for i in 0..500 {
            let line = json!({"fire_at": due, "channel": "log",
                "recipient": format!("r-{batch}-{i}"), "message": {"i": i}});
            lines.push_str(&line.to_string());
            lines.push('\n');
        }
        batch += 1;
        let resp = client()
            .post(format!("{url}/v1/timers:bulk"))
            .header("content-type", "application/x-ndjson")
            .body(lines)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let text = resp.text().await.unwrap();
        let mut ids = Vec::with_capacity(500);
        for l in text.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["status"], 201, "{v}");
            ids.push(v["id"].as_i64().unwrap());
        }
        acked.lock().unwrap().extend(ids);
    }
}

#[tokio::test]
async fn a_backup_taken_during_a_burst_restores_every_timer_acknowledged_before_it() {
    let mut live = Server::start("").await;
    let acked = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let creates = tokio::spawn(create_until(
        live.url.clone(),
        acked.clone(),
        stop.clone(),
        20_000,
    ));
    wait_for("the burst under way", Duration::from_secs(20), || async {
        acked.lock().unwrap().len() >= 8_000
    })
    .await;

    // Everything acknowledged up to here must be in the backup.
    let before: HashSet<i64> = acked.lock().unwrap().iter().copied().collect();
    let backup_file = live.dir.path().join("herald-backup.db");
    let started = Instant::now();
    let (ok, out, err) = herald(&[
        "backup",
        "--config",
        s(&live.config_path()),
        "--to",
        s(&backup_file),
    ])
    .await;
    let took = started.elapsed();
    assert!(ok, "backup failed: {err}");
    assert!(
        out.contains("pages") && out.contains("schema version"),
        "{out}"
    );
    let during = acked.lock().unwrap().len() - before.len();
    stop.store(true, Ordering::Relaxed);
    let total = creates.await.unwrap();
    eprintln!(
        "backup took {took:?}; {} acknowledged before it, {during} while it ran, {total} in all: {out}",
        before.len()
    );
    assert!(total >= 20_000);

    // No overwrite without --force; with it, a second backup is written.
    let (ok, _, err) = herald(&[
        "backup",
        "--config",
        s(&live.config_path()),
        "--to",
        s(&backup_file),
    ])
    .await;
    assert!(!ok && err.contains("--force"), "{err}");
    live.terminate().await;

    // Restore into a new data directory and serve it.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("data").join("herald.db");
    let store = format!("sqlite://{}", db.display());
    let (ok, out, err) = herald(&["restore", "--store", &store, "--from", s(&backup_file)]).await;
    assert!(ok, "restore failed: {err}");
    assert!(out.contains("restored"), "{out}");
    let restored = Server::start_on(&store, dir, "").await;
    let stored = stored_ids(&db);
    let missing: Vec<_> = before.iter().filter(|id| !stored.contains(id)).collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged timers missing, e.g. {:?}",
        missing.len(),
        before.len(),
        &missing[..missing.len().min(5)]
    );
    assert!(restored.total_timers().await >= before.len() as u64);
    // The server sees them too: a sample through the API.
    let mut sample: Vec<i64> = before.iter().copied().collect();
    sample.sort_unstable();
    for id in sample
        .iter()
        .step_by(sample.len() / 50)
        .chain(sample.last())
    {
        let t = restored.timer(*id).await;
        assert_eq!(t["state"], "pending", "{t}");
    }

    // Restoring again on top of it is refused.
    let (ok, _, err) = herald(&["restore", "--store", &store, "--from", s(&backup_file)]).await;
    assert!(!ok && err.contains("already exists"), "{err}");
}

#[tokio::test]
async fn backup_and_restore_refuse_what_they_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);

    // A PostgreSQL store: pointed to pg_dump, nothing connected to.
    let (ok, _, err) = herald(&[
        "backup",
        "--store",
        "postgres://herald:secret@127.0.0.1:1/herald",
        "--to",
        s(&path("pg.db")),
    ])
    .await;
    assert!(!ok && err.contains("pg_dump"), "{err}");
    assert!(!err.contains("secret"), "password shown: {err}");
    assert!(!path("pg.db").exists());

    // A store that does not exist.
    let missing = format!("sqlite://{}", path("nowhere/herald.db").display());
    let (ok, _, err) = herald(&["backup", "--store", &missing, "--to", s(&path("x.db"))]).await;
    assert!(!ok && err.contains("does not exist"), "{err}");

    // A file that is not a database.
    std::fs::write(
        path("notes.txt"),
        "these are notes, not a database at all\n",
    )
    .unwrap();
    let fresh = format!("sqlite://{}", path("fresh/herald.db").display());
    let (ok, _, err) = herald(&[
        "restore",
        "--store",
        &fresh,
        "--from",
        s(&path("notes.txt")),
    ])
    .await;
    assert!(!ok && err.contains("not a Herald database"), "{err}");
    assert!(!path("fresh").exists(), "nothing created");

    // A non-empty data directory.
    std::fs::create_dir_all(path("busy")).unwrap();
    std::fs::write(path("busy/keep.txt"), "mine").unwrap();
    let busy = format!("sqlite://{}", path("busy/herald.db").display());
    let (ok, _, err) =
        herald(&["restore", "--store", &busy, "--from", s(&path("notes.txt"))]).await;
    assert!(
        !ok && err.contains("not empty") && err.contains("keep.txt"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(path("busy")).unwrap().count(), 1);
}
