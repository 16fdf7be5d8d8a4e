//! Access hardening, on the real binary: a copy of the store no
//! longer mints console sessions; the store's directory, files and backups
//! are owner-only; refusals before any key is recognised are counted, not
//! logged one row each; and the console's login refuses posts from other
//! origins and leaves a trace when it fails.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::{BIN, Server, client, pg_database};
use hmac::{Hmac, Mac};
use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use sha2::Sha256;

const ADMIN: &str = "e2e-security-admin-key-0123456789";

/// A protected node on `store` (its files in `dir`), with `env` besides the
/// admin key.
async fn protected(store: &str, dir: tempfile::TempDir, env: &[(&str, &str)]) -> Server {
    let mut all = vec![("HERALD_ADMIN_KEY", ADMIN)];
    all.extend_from_slice(env);
    Server::start_with_env(store, dir, "", &all).await
}

/// A protected node on a fresh SQLite store in `dir/data/herald.db`.
async fn protected_sqlite() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", dir.path().join("data/herald.db").display());
    protected(&store, dir, &[]).await
}

/// A client that shows redirects instead of following them.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// A request to `s` that shows redirects: status, headers and body (JSON,
/// or the text).
async fn send(
    s: &Server,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<(&str, String)>,
) -> (u16, HeaderMap, Value) {
    let url = format!("{}{path}", s.url);
    common::exchange(&browser(), method, &url, headers, body).await
}

/// `GET path` with the admin key: its body, after checking the `200`.
async fn admin_get(s: &Server, path: &str) -> Value {
    let admin = bearer(ADMIN);
    let (st, _, v) = send(s, Method::GET, path, &[("authorization", &admin)], None).await;
    assert_eq!(st, 200, "{v}");
    v
}

fn bearer(key: &str) -> String {
    format!("Bearer {key}")
}

fn timer() -> (&'static str, String) {
    let t = json!({"delay_ms": 3_600_000, "channel": "log", "recipient": "r", "message": {}});
    ("application/json", t.to_string())
}

/// A key of `tenant` with `scopes`, made by the admin: `(id, key)`.
async fn make_key(s: &Server, tenant: &str, scopes: &[&str]) -> (i64, String) {
    let body = json!({"tenant": tenant, "scopes": scopes, "name": tenant}).to_string();
    let (st, _, v) = send(
        s,
        Method::POST,
        "/v1/keys",
        &[("authorization", bearer(ADMIN).as_str())],
        Some(("application/json", body)),
    )
    .await;
    assert_eq!(st, 201, "{v}");
    (v["id"].as_i64().unwrap(), v["key"].as_str().unwrap().into())
}

/// `POST /ui/login` with `key` and `headers`: status and headers.
async fn login(s: &Server, key: &str, headers: &[(&str, &str)]) -> (u16, HeaderMap) {
    let form = format!("key={}", key.replace('+', "%2B").replace(' ', "+"));
    let (st, h, _) = send(
        s,
        Method::POST,
        "/ui/login",
        headers,
        Some(("application/x-www-form-urlencoded", form)),
    )
    .await;
    (st, h)
}

/// The `herald_session=...` pair a login set.
fn cookie_of(headers: &HeaderMap) -> String {
    let set = headers["set-cookie"].to_str().unwrap();
    set.split(';').next().unwrap().to_string()
}

/// The value of `herald_unauthenticated_refusals_total{reason="..."}`.
async fn refusals(s: &Server, reason: &str) -> u64 {
    let text = admin_get(s, "/metrics").await;
    let series = format!("herald_unauthenticated_refusals_total{{reason=\"{reason}\"}} ");
    text.as_str()
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(&series))
        .map_or(0, |v| v.trim().parse::<f64>().unwrap() as u64)
}

/// Every audit entry, as the admin reads them.
async fn audit(s: &Server) -> Vec<Value> {
    let v = admin_get(s, "/v1/audit?limit=1000").await;
    v["entries"].as_array().unwrap().clone()
}

/// What a tally counts: `(reason, method, route, status)`.
type Kind = (String, String, String, u64);

/// The tallies among `entries`: each kind with the requests it counts,
/// added up, and how many entries made them.
fn tallies(entries: &[Value]) -> Vec<(Kind, (u64, usize))> {
    let mut out: std::collections::BTreeMap<_, (u64, usize)> = Default::default();
    for e in entries.iter().filter(|e| !e["reason"].is_null()) {
        let kind = (
            e["reason"].as_str().unwrap().to_string(),
            e["method"].as_str().unwrap().to_string(),
            e["route"].as_str().unwrap().to_string(),
            e["status"].as_u64().unwrap(),
        );
        let t = out.entry(kind).or_default();
        t.0 += e["count"].as_u64().unwrap();
        t.1 += 1;
    }
    out.into_iter().collect()
}

// ---- item 3: sessions a copy of the store cannot mint ----

fn hmac(key: &[u8], msg: &[u8]) -> String {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap();
    m.update(msg);
    URL_SAFE_NO_PAD.encode(m.finalize().into_bytes())
}

/// Session cookies and CSRF tokens for key `id` as someone holding only its
/// stored hash can make them: the way sessions were signed before (`v1`,
/// keyed with the stored hash), and the same for today's format.
fn forged(id: i64, stored_hash: &[u8]) -> Vec<(String, String)> {
    let exp = common::now_ms() + 3_600_000;
    let v1 = |label: &str| {
        hmac(
            stored_hash,
            format!("herald-{label}|v1|{id}|{exp}").as_bytes(),
        )
    };
    let v2 = |label: &str| {
        let mut msg = format!("herald-{label}|v2|{id}|{exp}|").into_bytes();
        msg.extend_from_slice(stored_hash);
        hmac(stored_hash, &msg)
    };
    vec![
        (
            format!("herald_session=v1.{id}.{exp}.{}", v1("session")),
            v1("csrf"),
        ),
        (
            format!("herald_session=v2.{id}.{exp}.{}", v2("session")),
            v2("csrf"),
        ),
    ]
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Reads `api_keys.hash` as an attacker with the store would, then tries
/// the cookies made from it on the victim tenant's data.
async fn forged_sessions_open_nothing(s: &Server, stored_hash: impl Fn(i64) -> Vec<u8>) {
    let (id, key) = make_key(s, "victim", &["admin", "read", "write"]).await;
    let victim = [("authorization", bearer(&key))];
    let victim: Vec<(&str, &str)> = victim.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (st, _, _) = send(s, Method::POST, "/v1/timers", &victim, Some(timer())).await;
    assert_eq!(st, 201);
    // A genuine session works, so the refusals below are about the forgery.
    let (st, h) = login(s, &key, &[]).await;
    assert_eq!(st, 303);
    let (st, _, v) = send(
        s,
        Method::GET,
        "/v1/timers",
        &[("cookie", cookie_of(&h).as_str())],
        None,
    )
    .await;
    assert_eq!(st, 200, "{v}");

    let hash = stored_hash(id);
    assert_eq!(hash.len(), 32);
    for (cookie, csrf) in forged(id, &hash) {
        let (st, _, v) = send(
            s,
            Method::GET,
            "/v1/timers",
            &[("cookie", cookie.as_str())],
            None,
        )
        .await;
        assert_eq!(
            st, 401,
            "a forged session read the victim's timers: {cookie} {v}"
        );
        let (st, _, v) = send(
            s,
            Method::POST,
            "/v1/timers",
            &[("cookie", cookie.as_str()), ("x-csrf-token", csrf.as_str())],
            Some(timer()),
        )
        .await;
        assert_eq!(st, 401, "a forged session wrote a timer: {cookie} {v}");
        let (st, h, _) = send(
            s,
            Method::GET,
            "/ui/timers",
            &[("cookie", cookie.as_str())],
            None,
        )
        .await;
        assert_eq!(st, 303);
        assert_eq!(h["location"], "/ui/login");
    }
    let (_, _, v) = send(s, Method::GET, "/v1/timers", &victim, None).await;
    assert_eq!(v["timers"].as_array().map(Vec::len), Some(1), "{v}");
}

#[tokio::test]
async fn a_session_forged_from_the_sqlite_files_key_hash_is_refused() {
    let s = protected_sqlite().await;
    let db = s.dir.path().join("data/herald.db");
    forged_sessions_open_nothing(&s, |id| {
        let conn =
            rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        conn.query_row("SELECT hash FROM api_keys WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .unwrap()
    })
    .await;
}

#[tokio::test]
async fn a_session_forged_from_a_postgres_select_of_the_key_hash_is_refused() {
    let Some((db, url)) = pg_database("forged_session") else {
        eprintln!("SKIPPED: PostgreSQL is not installed");
        return;
    };
    let pg = herald_pgtemp::PgTemp::shared().unwrap().unwrap();
    let s = protected(&url, tempfile::tempdir().unwrap(), &[]).await;
    forged_sessions_open_nothing(&s, |id| {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], pg.port()));
        let mut conn =
            herald_pgtemp::Session::connect(addr, pg.user(), db.name(), Duration::from_secs(10))
                .unwrap();
        let rows = conn
            .simple_query(&format!(
                "SELECT encode(hash, 'hex') FROM api_keys WHERE id = {id}"
            ))
            .unwrap();
        hex(rows[0][0].as_deref().unwrap())
    })
    .await;
}

/// The session secret: derived from the admin key (so every node and a
/// restart accept a session), or set on its own, which ends every session
/// made before; too short a one is refused at start.
#[tokio::test]
async fn the_session_secret_comes_from_the_admin_key_or_its_own_variable() {
    let mut first = protected_sqlite().await;
    let store = format!(
        "sqlite://{}",
        first.dir.path().join("data/herald.db").display()
    );
    let (st, h) = login(&first, ADMIN, &[]).await;
    assert_eq!(st, 303);
    let cookie = cookie_of(&h);
    first.terminate().await;
    let reads = |s: &Server, cookie: String| {
        let s_url = s.url.clone();
        async move {
            let resp = browser()
                .get(format!("{s_url}/v1/timers"))
                .header("cookie", cookie)
                .send()
                .await
                .unwrap();
            resp.status().as_u16()
        }
    };
    // Another node (or a restart) with the same admin key.
    let mut second = protected(&store, tempfile::tempdir().unwrap(), &[]).await;
    assert_eq!(reads(&second, cookie.clone()).await, 200);
    second.terminate().await;
    // Its own secret: the old session ends; a new one works.
    let secret = "a-session-secret-of-at-least-32-chars";
    let env = [("HERALD_SESSION_SECRET", secret)];
    let mut third = protected(&store, tempfile::tempdir().unwrap(), &env).await;
    assert_eq!(reads(&third, cookie).await, 401);
    let (st, h) = login(&third, ADMIN, &[]).await;
    assert_eq!(st, 303);
    assert_eq!(reads(&third, cookie_of(&h)).await, 200);
    assert!(!third.log().contains(secret));
    third.terminate().await;

    // Too short: the node does not start, and says which variable.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("herald.toml");
    std::fs::write(
        &path,
        format!("listen = \"127.0.0.1:0\"\nstore = \"{store}\"\n"),
    )
    .unwrap();
    let out = tokio::process::Command::new(BIN)
        .args(["serve", "--config", path.to_str().unwrap()])
        .env("HERALD_ADMIN_KEY", ADMIN)
        .env("HERALD_SESSION_SECRET", "short-secret")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("HERALD_SESSION_SECRET") && stderr.contains("too short"),
        "{stderr}"
    );
    assert!(!stderr.contains("short-secret"), "{stderr}");
}

// ---- item 3: owner-only files ----

#[cfg(unix)]
fn mode(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

/// Runs `herald ARGS` under `umask 000`, so only the modes Herald sets
/// itself keep others out.
#[cfg(unix)]
async fn herald_with_open_umask(args: &[&str]) -> String {
    let out = tokio::process::Command::new("sh")
        .arg("-c")
        .arg("umask 000 && exec \"$0\" \"$@\"")
        .arg(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .await
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "herald {args:?}: {text}");
    text
}

#[cfg(unix)]
#[tokio::test]
async fn the_store_its_directory_and_backups_are_owner_only() {
    let mut s = Server::start("").await;
    let data = s.dir.path().join("data");
    let db = data.join("herald.db");
    let (st, _) = s
        .post(
            "/v1/timers",
            &json!({"delay_ms": 3_600_000, "channel": "log", "recipient": "r", "message": {}}),
        )
        .await;
    assert_eq!(st, 201);
    assert_eq!(mode(&data), 0o700, "the data directory");
    assert_eq!(mode(&db), 0o600, "the database");
    for suffix in ["-wal", "-shm"] {
        let f = data.join(format!("herald.db{suffix}"));
        if f.exists() {
            assert_eq!(mode(&f), 0o600, "{}", f.display());
        }
    }

    // A backup, taken under a umask that would let everyone read it.
    let store = format!("sqlite://{}", db.display());
    let copy = s.dir.path().join("copy.db");
    herald_with_open_umask(&["backup", "--store", &store, "--to", copy.to_str().unwrap()]).await;
    assert_eq!(mode(&copy), 0o600, "the backup");
    // A restore into a new data directory.
    let restored = s.dir.path().join("restored/data/herald.db");
    let into = format!("sqlite://{}", restored.display());
    herald_with_open_umask(&[
        "restore",
        "--store",
        &into,
        "--from",
        copy.to_str().unwrap(),
    ])
    .await;
    assert_eq!(mode(&restored), 0o600, "the restored database");
    assert_eq!(
        mode(restored.parent().unwrap()),
        0o700,
        "the restored data directory"
    );

    // A store an older release left readable is made owner-only at start.
    s.terminate().await;
    for f in [&db, &data.join("herald.db-shm")] {
        if f.exists() {
            std::fs::set_permissions(
                f,
                <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o644),
            )
            .unwrap();
        }
    }
    s.restart().await;
    assert_eq!(mode(&db), 0o600, "tightened at start");
    assert!(s.log().contains("readable by other users"), "{}", s.log());
}

// ---- item 4: refusals before a key are counted ----

/// `n` keyless POSTs and 10 with a made-up key from a few clients at once,
/// then the node stops (writing its tallies) and starts again: the audit
/// log holds a few entries that count them all, and the metric all of them.
async fn a_keyless_flood_is_counted(mut s: Server) {
    let n: u64 = 4000;
    let workers = 8;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers {
        let url = format!("{}/v1/timers", s.url);
        tasks.spawn(async move {
            let c = client();
            for _ in 0..n / workers {
                let resp = c
                    .post(&url)
                    .header("content-type", "application/json")
                    .body("{}")
                    .send()
                    .await
                    .unwrap();
                assert_eq!(resp.status().as_u16(), 401);
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    for _ in 0..10 {
        let (st, _, _) = send(
            &s,
            Method::DELETE,
            "/v1/timers/1",
            &[("authorization", "Bearer hrk_77_made-up")],
            None,
        )
        .await;
        assert_eq!(st, 401);
    }
    let counted = (
        refusals(&s, "no_key").await,
        refusals(&s, "invalid_key").await,
    );
    s.terminate().await;
    s.restart().await;
    let entries = audit(&s).await;
    assert!(
        entries.len() <= 4,
        "{} audit entries for {n} refusals",
        entries.len()
    );
    let t = tallies(&entries);
    let kind =
        |r: &str, m: &str, route: &str| (r.to_string(), m.to_string(), route.to_string(), 401);
    assert_eq!(t.len(), 2, "{t:?}");
    assert_eq!(t[0].0, kind("invalid_key", "DELETE", "/v1/timers/{id}"));
    assert_eq!(t[0].1.0, 10);
    assert_eq!(t[1].0, kind("no_key", "POST", "/v1/timers"));
    assert_eq!(t[1].1.0, n);
    // One entry per kind a minute: the flood took less than two.
    assert!(t.iter().all(|(_, (_, rows))| *rows <= 2), "{t:?}");
    // The metric counted every one.
    assert_eq!(counted, (n, 10));
}

#[tokio::test]
async fn a_keyless_flood_writes_a_few_audit_entries_on_sqlite() {
    a_keyless_flood_is_counted(protected_sqlite().await).await;
}

#[tokio::test]
async fn a_keyless_flood_writes_a_few_audit_entries_on_postgres() {
    let Some((_db, url)) = pg_database("keyless_flood") else {
        eprintln!("SKIPPED: PostgreSQL is not installed");
        return;
    };
    a_keyless_flood_is_counted(protected(&url, tempfile::tempdir().unwrap(), &[]).await).await;
}

// ---- item 12: the console's login and logout ----

#[tokio::test]
async fn console_login_refuses_other_origins_and_failed_logins_leave_a_trace() {
    let mut s = protected_sqlite().await;
    let (_, key) = make_key(&s, "shop", &["read"]).await;
    let own = s.url.clone();
    // Login CSRF: another site's form, or a browser that says so.
    for headers in [
        vec![("origin", "http://evil.example")],
        vec![("origin", "null")],
        vec![("sec-fetch-site", "cross-site")],
    ] {
        let (st, h) = login(&s, &key, &headers).await;
        assert_eq!(st, 403, "{headers:?}");
        assert!(!h.contains_key("set-cookie"), "{headers:?}");
    }
    // The console's own form, and a client that is no browser.
    let (st, h) = login(
        &s,
        &key,
        &[("origin", own.as_str()), ("sec-fetch-site", "same-origin")],
    )
    .await;
    assert_eq!(st, 303);
    let cookie = cookie_of(&h);
    let (st, _) = login(&s, &key, &[]).await;
    assert_eq!(st, 303);
    // Logout: another site may not end the session either.
    let (st, h, v) = send(
        &s,
        Method::POST,
        "/ui/logout",
        &[
            ("cookie", cookie.as_str()),
            ("origin", "http://evil.example"),
        ],
        None,
    )
    .await;
    assert_eq!((st, &v["error"]["code"]), (403, &json!("cross_origin")));
    assert!(!h.contains_key("set-cookie"));
    let (st, h, _) = send(
        &s,
        Method::POST,
        "/ui/logout",
        &[("cookie", cookie.as_str()), ("origin", own.as_str())],
        None,
    )
    .await;
    assert_eq!(st, 303);
    assert!(h["set-cookie"].to_str().unwrap().contains("Max-Age=0"));

    // A failed login: a warning without the key, the metric, the audit.
    let wrong = "hrk_1_not-the-secret-at-all";
    let (st, _) = login(&s, wrong, &[("origin", own.as_str())]).await;
    assert_eq!(st, 401);
    let log = s.log();
    assert!(
        log.lines()
            .any(|l| l.contains("WARN") && l.contains("console login refused")),
        "{log}"
    );
    assert!(!log.contains("not-the-secret"), "{log}");
    assert_eq!(refusals(&s, "login_failed").await, 1);
    assert_eq!(refusals(&s, "cross_origin").await, 4);
    s.terminate().await;
    s.restart().await;
    let t = tallies(&audit(&s).await);
    let kind = |r: &str, route: &str, status| {
        (r.to_string(), "POST".to_string(), route.to_string(), status)
    };
    assert_eq!(
        t,
        [
            (kind("cross_origin", "/ui/login", 403), (3, 1)),
            (kind("cross_origin", "/ui/logout", 403), (1, 1)),
            (kind("login_failed", "/ui/login", 401), (1, 1)),
        ]
    );
}

/// Single creates of data are audited only with `[audit] data_plane =
/// true` (here through its variable); a change of what exists always is.
#[tokio::test]
async fn single_creates_are_audited_only_when_asked() {
    for (data_plane, want_create) in [(None, false), (Some("true"), true)] {
        let dir = tempfile::tempdir().unwrap();
        let store = format!("sqlite://{}", dir.path().join("data/herald.db").display());
        let env: Vec<(&str, &str)> = data_plane
            .map(|v| ("HERALD_AUDIT__DATA_PLANE", v))
            .into_iter()
            .collect();
        let s = protected(&store, dir, &env).await;
        let admin = bearer(ADMIN);
        let (st, _, v) = send(
            &s,
            Method::POST,
            "/v1/timers",
            &[("authorization", &admin)],
            Some(timer()),
        )
        .await;
        assert_eq!(st, 201, "{v}");
        let path = format!("/v1/timers/{}", v["id"]);
        let (st, _, v) = send(
            &s,
            Method::DELETE,
            &path,
            &[("authorization", &admin)],
            None,
        )
        .await;
        assert_eq!(st, 200, "{v}");
        // Entries are written in batches: wait for the cancel's.
        let mut entries = Vec::new();
        for _ in 0..100 {
            entries = audit(&s).await;
            if entries.iter().any(|e| e["route"] == "/v1/timers/{id}") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            entries.iter().any(|e| e["route"] == "/v1/timers/{id}"),
            "{entries:#?}"
        );
        let created = entries
            .iter()
            .any(|e| e["route"] == "/v1/timers" && e["status"] == 201);
        assert_eq!(
            created, want_create,
            "data_plane {data_plane:?}: {entries:#?}"
        );
    }
}
