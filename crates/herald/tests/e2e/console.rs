//! The console in a real browser: headless Chromium driven over WebDriver
//! (`chromedriver`), against the real binary. One server and one browser
//! session per store. Every page must load without a JavaScript error and
//! show data made through the API; actions taken in the console must show
//! in the API. A screenshot of every page goes to `target/ui-screenshots/`.
//!
//! Without `chromium` and `chromedriver` the tests skip loudly, unless
//! `HERALD_REQUIRE_BROWSER=1` (set by `.ci/run`).

use crate::common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::{Mock, Server, now_ms, parse_ms, rfc3339};
use serde_json::{Value, json};

const ADMIN: &str = "console-admin-key-0123456789abcdef";

// ---- a small WebDriver client ----

/// `chromedriver` and one browser session; both end on drop.
struct Browser {
    driver: tokio::process::Child,
    base: String,
    http: reqwest::Client,
    _profile: tempfile::TempDir,
}

fn find_program(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|n| {
        std::env::split_paths(&path)
            .map(|d| d.join(n))
            .find(|p| p.is_file())
    })
}

fn required() -> bool {
    std::env::var("HERALD_REQUIRE_BROWSER").is_ok_and(|v| v == "1")
}

impl Browser {
    /// A fresh browser, or `None` (with a loud message) when there is none
    /// and none is required.
    async fn start() -> Option<Browser> {
        let chromium = find_program(&["chromium", "chromium-browser", "google-chrome"]);
        let driver = find_program(&["chromedriver"]);
        let (Some(chromium), Some(driver)) = (chromium, driver) else {
            assert!(
                !required(),
                "HERALD_REQUIRE_BROWSER=1 but chromium or chromedriver is not installed \
                 (apt-get install chromium chromium-driver)"
            );
            eprintln!(
                "\n\n!!!!!!!! SKIPPED: the console browser tests need `chromium` and \
                 `chromedriver` (Debian: apt-get install chromium chromium-driver) !!!!!!!!\n\n"
            );
            return None;
        };
        let port = free_port();
        let child = tokio::process::Command::new(&driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start chromedriver");
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(r) = http.get(format!("{base}/status")).send().await
                && let Ok(v) = r.json::<Value>().await
                && v["value"]["ready"] == true
            {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let profile = tempfile::tempdir().unwrap();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1400,1000",
                    format!("--user-data-dir={}", profile.path().display())],
            },
        }}});
        let r: Value = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .await
            .expect("new session")
            .json()
            .await
            .unwrap();
        let id = r["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no browser session: {r}"))
            .to_string();
        Some(Browser {
            driver: child,
            base: format!("{base}/session/{id}"),
            http,
            _profile: profile,
        })
    }

    async fn cmd(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let v: Value = req.send().await.expect("webdriver").json().await.unwrap();
        v["value"].clone()
    }

    async fn goto(&self, url: &str) {
        let v = self
            .cmd(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await;
        assert!(v.is_null(), "navigate to {url}: {v}");
    }

    async fn run(&self, script: &str, args: Value) -> Value {
        self.cmd(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
        .await
    }

    async fn run_async(&self, script: &str) -> Value {
        self.cmd(
            reqwest::Method::POST,
            "/execute/async",
            Some(json!({"script": script, "args": []})),
        )
        .await
    }

    /// The page's text, all of it.
    async fn text(&self) -> String {
        self.run("return document.body.innerText;", json!([]))
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Waits until the page's text contains `needle`.
    async fn wait_text(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let text = self.text().await;
            if text.contains(needle) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the page never showed {needle:?}; it shows:\n{text}\nerrors: {:?}",
                self.errors().await
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks the first element matching `css` (waiting for it), in the
    /// page, so a list redrawn meanwhile does not leave a stale handle.
    async fn click(&self, css: &str) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let clicked = self
                .run(
                    "var e = document.querySelector(arguments[0]); if (!e || e.disabled) return false; e.click(); return true;",
                    json!([css]),
                )
                .await;
            if clicked == true {
                return;
            }
            assert!(Instant::now() < deadline, "nothing to click at {css}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn set_value(&self, css: &str, value: &str) {
        let ok = self
            .run(
                "var e = document.querySelector(arguments[0]); if (!e) return false; e.value = arguments[1]; return true;",
                json!([css, value]),
            )
            .await;
        assert_eq!(ok, true, "no input at {css}");
    }

    /// The JavaScript errors of the page: those the page collected and the
    /// browser's log at level SEVERE.
    async fn errors(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .run(
                "return window.__heraldErrors || ['no collector: app.js did not run'];",
                json!([]),
            )
            .await
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .collect();
        let log = self
            .cmd(
                reqwest::Method::POST,
                "/se/log",
                Some(json!({"type": "browser"})),
            )
            .await;
        for entry in log.as_array().cloned().unwrap_or_default() {
            if entry["level"] == "SEVERE" {
                out.push(entry["message"].as_str().unwrap_or_default().to_string());
            }
        }
        out
    }

    async fn screenshot(&self, page: &str) {
        let v = self.cmd(reqwest::Method::GET, "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().expect("screenshot"))
            .expect("png");
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{page}.png")), png).unwrap();
    }

    async fn quit(mut self) {
        let _ = self.cmd(reqwest::Method::DELETE, "", None).await;
        let _ = self.driver.kill().await;
    }
}

/// `target/ui-screenshots/` (the workspace's target dir, or a store's
/// subfolder of it).
fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("ui-screenshots")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

// ---- the API, as the test's own client ----

struct Api {
    url: String,
    key: Option<String>,
    http: reqwest::Client,
}

impl Api {
    fn new(url: &str, key: Option<&str>) -> Api {
        Api {
            url: url.to_string(),
            key: key.map(str::to_string),
            http: reqwest::Client::new(),
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self.http.request(method, format!("{}{path}", self.url));
        if let Some(k) = &self.key {
            req = req.bearer_auth(k);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> Value {
        let (s, v) = self.call(reqwest::Method::GET, path, None).await;
        assert_eq!(s, 200, "GET {path}: {v}");
        v
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let (s, v) = self.call(reqwest::Method::POST, path, Some(body)).await;
        assert!((200..300).contains(&s), "POST {path}: {s} {v}");
        v
    }
}

/// Polls `cond` until it holds (15 s at most).
async fn eventually<F, Fut>(what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    common::wait_for(what, Duration::from_secs(15), &mut cond).await
}

// ---- the data every page shows ----

struct Seeded {
    pending_timer: i64,
    dead_timer: i64,
    job: i64,
    rule: i64,
    /// A small job on `hooks` that delivered to `console-eve`.
    small_job: i64,
}

fn config(mock: &Mock) -> String {
    format!(
        "[[channels]]\nname = \"hooks\"\nkind = \"webhook\"\nurl = \"{hook}\"\n\n\
         [[channels]]\nname = \"slow\"\nkind = \"webhook\"\nurl = \"{hook}\"\nrate_per_sec = 1\n\n\
         [[channels]]\nname = \"broken\"\nkind = \"webhook\"\nurl = \"http://127.0.0.1:9/hook\"\nmax_attempts = 1\n\n\
         [[channels]]\nname = \"mini\"\nkind = \"wechat_mini\"\napi_base = \"{base}\"\n\
         appid = \"wxmockappid\"\nsecret = \"mock-wechat-secret\"\n\n\
         [reminders]\nleads_minutes = [0, 15]\n",
        hook = mock.hook(),
        base = mock.url
    )
}

async fn seed(api: &Api) -> Seeded {
    let now = now_ms();
    let pending = api
        .post(
            "/v1/timers",
            json!({"channel": "hooks", "recipient": "console-alice", "fire_at": rfc3339(now + 3_600_000),
                   "message": {"text": "coupon <b>reminder</b>"}, "idempotency_key": "console-pending"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let dead = api
        .post(
            "/v1/timers",
            json!({"channel": "broken", "recipient": "console-bob", "delay_ms": 0,
                   "message": {"text": "never arrives"}}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let users: Vec<String> = (0..300).map(|i| format!("console-user-{i}")).collect();
    let job = api
        .post(
            "/v1/jobs",
            json!({"channel": "slow", "users": users, "message": {"text": "big campaign"},
                   "name": "console coupon push", "category": "coupon-reminder"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let rule = api
        .post(
            "/v1/rules",
            json!({"name": "console digest", "channel": "hooks", "message": {"text": "digest"},
                   "audience": {"users": ["console-carol"]},
                   "schedule": {"type": "cron", "cron": "0 9 * * *", "timezone": "Europe/Paris"}}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    api.call(
        reqwest::Method::PUT,
        "/v1/subjects/console-launch",
        Some(json!({"start_at": rfc3339(now + 86_400_000), "title": "Console launch"})),
    )
    .await;
    api.post(
        "/v1/reminders",
        json!({"user_id": "console-dave", "subject_id": "console-launch", "channel": "hooks", "channel_type": "app", "lead_minutes": 15}),
    )
    .await;
    api.post(
        "/v1/templates",
        json!({"name": "console-welcome", "description": "welcome mail",
               "locales": {"default": {"webhook": {"text": "Welcome, {{ name }}! Opens {{ at | time }}"}},
                           "zh": {"webhook": {"text": "欢迎 {{ name }}，{{ at | time }} 开始"}}}}),
    )
    .await;
    // A mini-program user with the grants of two taps.
    api.call(
        reqwest::Method::PUT,
        "/v1/subscribers/console-ann",
        Some(json!({"addresses": {"wechat_mini": {"mini": "o-console-ann"}}})),
    )
    .await;
    api.post(
        "/v1/subscribers/console-ann/grants",
        json!({"key": "console-tap", "channel": "mini",
               "grants": [{"template_id": "TPL_CONSOLE", "count": 2}, {"template_id": "TPL_LONG", "long_term": true}]}),
    )
    .await;
    // One user with a bit of everything: a timer and a campaign send that
    // are delivered, and an app reminder that fails a few seconds from now,
    // at its subject's start: the directory has only an email for her.
    api.call(
        reqwest::Method::PUT,
        "/v1/subscribers/console-eve",
        Some(json!({"addresses": {"email": "eve@example.com"}})),
    )
    .await;
    let eve_timer = api
        .post(
            "/v1/timers",
            json!({"channel": "hooks", "recipient": "console-eve", "delay_ms": 0,
                   "message": {"text": "hello eve"}}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let small_job = api
        .post(
            "/v1/jobs",
            json!({"channel": "hooks", "users": ["console-eve", "console-frank"],
                   "message": {"text": "small push"}, "name": "console small push"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    // A campaign to her app: the job records why it could not send.
    let app_job = api
        .post(
            "/v1/jobs",
            json!({"channel": "hooks", "users": ["console-eve"], "to": {"channel_type": "app"},
                   "message": {"text": "app push"}, "name": "console app push"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    api.call(
        reqwest::Method::PUT,
        "/v1/subjects/console-fail",
        Some(json!({"start_at": rfc3339(now_ms() + 3_000), "title": "Console flop"})),
    )
    .await;
    api.post(
        "/v1/reminders",
        json!({"user_id": "console-eve", "subject_id": "console-fail", "channel": "hooks",
               "channel_type": "app", "lead_minutes": 0}),
    )
    .await;
    // The broken channel refuses connections: one attempt, then dead.
    eventually("the broken timer to die", || async {
        let t = api.get(&format!("/v1/timers/{dead}")).await;
        t["state"] == "dead" || t["state"] == "failed"
    })
    .await;
    eventually("eve's timer, job and failed reminder", || async {
        let t = api.get(&format!("/v1/timers/{eve_timer}")).await;
        let j = api.get(&format!("/v1/jobs/{small_job}")).await;
        let app = api.get(&format!("/v1/jobs/{app_job}")).await;
        let s = api.get("/v1/subjects/console-fail").await;
        t["state"] == "done"
            && j["state"] == "done"
            && app["totals"]["remaining"] == 0
            && s["outcomes"]["failed"]
                .as_array()
                .is_some_and(|f| !f.is_empty())
    })
    .await;
    Seeded {
        pending_timer: pending,
        dead_timer: dead,
        job,
        rule,
        small_job,
    }
}

/// The Users page: one user's reminders (the failed one with its reason in
/// words), timers and campaign sends, each as the API has them, and her
/// profile; found through the search box, "no profile" for a user the
/// directory lacks and the profile of one it has.
async fn user_page(b: &Browser, api: &Api, s: &Seeded) {
    let u = api.get("/v1/users/console-eve").await;
    let reminder = &u["reminders"][0]["reminders"][0];
    assert_eq!(u["reminders"][0]["subject_id"], "console-fail", "{u}");
    let send = u["campaign_sends"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["job_id"] == s.small_job))
        .cloned()
        .unwrap_or_else(|| panic!("eve in the small job: {u}"));
    let failed_timer = u["timers"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["id"] == reminder["timer_id"]))
        .cloned()
        .unwrap_or_else(|| panic!("the reminder's timer among eve's: {u}"));
    let error = failed_timer["last_error"].as_str().unwrap_or_default();
    assert!(!error.is_empty(), "{failed_timer}");
    // The app campaign could not reach her: its send's error is a code.
    let unsent = u["campaign_sends"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["job_name"] == "console app push"))
        .cloned()
        .unwrap_or_else(|| panic!("eve in the app job: {u}"));
    let code = unsent["send"]["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{unsent}"))
        .to_string();

    visit(
        b,
        &api.url,
        "/ui/users#id=console-eve",
        "User console-eve",
        "user",
    )
    .await;
    b.wait_text("email: eve@example.com").await;
    b.wait_text(&format!("Searched the newest {} jobs", u["jobs_searched"]))
        .await;
    b.wait_text(&format!("job {} · console small push", s.small_job))
        .await;
    let shown = wait_js(
        b,
        "the user's tables",
        "var t = function (c) { var e = document.querySelector('table.' + c); return e ? e.innerText : null; };
         var r = t('user-reminders'), ti = t('user-timers'), se = t('user-sends');
         return r && ti && se ? [r, ti, se] : null;",
    )
    .await;
    let (rem, timers, sends) = (
        shown[0].as_str().unwrap_or_default(),
        shown[1].as_str().unwrap_or_default(),
        shown[2].as_str().unwrap_or_default(),
    );
    assert!(
        rem.contains("console-fail") && rem.contains(reminder["state"].as_str().unwrap_or("?")),
        "{rem}"
    );
    assert!(timers.contains(error), "{timers}");
    // The unsent campaign's code is explained beside it.
    let why = b
        .run(
            "var w = document.querySelector('table.user-sends .why'); return w ? w.textContent : '';",
            json!([]),
        )
        .await;
    assert!(
        why.as_str().is_some_and(|w| w.len() > 5) && sends.contains(&code),
        "no explanation of {code}: {sends}"
    );
    assert!(
        timers.contains("hooks") && timers.contains("done"),
        "{timers}"
    );
    assert!(
        sends.contains(send["send"]["state"].as_str().unwrap_or("?")),
        "{sends} vs {send}"
    );
    // The search box: a user the directory does not have, then one it has.
    b.set_value("#f-user", "console-nobody").await;
    b.click("#user-search button").await;
    b.wait_text("User console-nobody").await;
    b.wait_text("No profile").await;
    b.set_value("#f-user", "console-ann").await;
    b.click("#user-search button").await;
    b.wait_text("User console-ann").await;
    b.wait_text("o-console-ann").await;
    // A reminder's timer links to its user's page.
    b.goto(&format!(
        "{}/ui/timers#id={}",
        api.url, reminder["timer_id"]
    ))
    .await;
    b.click("p.user-line a.user-link").await;
    b.wait_text("User console-eve").await;
    b.wait_text("Campaign sends").await;
    let errors = b.errors().await;
    assert!(errors.is_empty(), "{errors:?}");
}

/// A subject whose reminder failed stands out in the list (a red badge in
/// its Failed column) and its page shows the reminders by state, the
/// error and the failed reminder, linked to its user.
async fn subject_outcomes(b: &Browser, api: &Api) {
    let list = api.get("/v1/subjects").await;
    let fail = list["subjects"]
        .as_array()
        .and_then(|l| l.iter().find(|s| s["subject_id"] == "console-fail"))
        .cloned()
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(fail["failed"], 1, "{fail}");
    visit(
        b,
        &api.url,
        "/ui/reminders",
        "Console flop",
        "subjects-failed",
    )
    .await;
    let badges = wait_js(
        b,
        "the failed badge",
        "var f = document.querySelector('tr[data-subject=\"console-fail\"] .badge.bad');
         var l = document.querySelector('tr[data-subject=\"console-launch\"]');
         return f && l ? [f.textContent, !!l.querySelector('.badge'), l.classList.contains('has-failed')] : null;",
    )
    .await;
    assert_eq!(badges, json!(["1", false, false]));
    let detail = api.get("/v1/subjects/console-fail").await;
    let error = detail["outcomes"]["top_errors"][0]["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{detail}"))
        .to_string();
    let state = detail["outcomes"]["failed"][0]["state"]
        .as_str()
        .unwrap_or("?")
        .to_string();
    visit(
        b,
        &api.url,
        "/ui/reminders#id=console-fail",
        "Top errors",
        "subject-failed",
    )
    .await;
    b.wait_text(&format!("{state} 1")).await;
    b.wait_text("pending 0").await;
    let shown = wait_js(
        b,
        "the failed reminders",
        "var t = document.querySelector('table.failed-reminders'), e = document.querySelector('table.top-errors');
         var a = t && t.querySelector('a.user-link');
         return a && e ? [e.innerText, t.innerText, a.getAttribute('href')] : null;",
    )
    .await;
    assert!(
        shown[0]
            .as_str()
            .is_some_and(|t| t.contains(&error) && t.contains("\t1")),
        "{shown}"
    );
    assert!(
        shown[1]
            .as_str()
            .is_some_and(|t| t.contains("console-eve") && t.contains(&error)),
        "{shown}"
    );
    assert_eq!(shown[2], "/ui/users#id=console-eve");
}

/// A job's page says what the job is (its name, its message in words), with
/// the segments folded away; the recipient finder finds a delivered
/// recipient's row and says a stranger is not in the job.
async fn job_identity(b: &Browser, api: &Api, s: &Seeded) {
    let path = format!("/ui/jobs#id={}", s.small_job);
    visit(b, &api.url, &path, "Find a recipient", "job-identity").await;
    b.wait_text("console small push").await;
    b.wait_text("text: small push").await;
    b.wait_text("delivered 0 · read 0 · clicked 0").await;
    let folded = b
        .run(
            "var d = document.querySelector('details.segment-internals'); return d ? d.open : null;",
            json!([]),
        )
        .await;
    assert_eq!(folded, false, "segments are folded by default");
    let row = api
        .get(&format!(
            "/v1/jobs/{}/sends?recipient=console-eve",
            s.small_job
        ))
        .await;
    let state = row["sends"][0]["state"]
        .as_str()
        .unwrap_or_else(|| panic!("{row}"))
        .to_string();
    b.set_value("#find-recipient", "console-eve").await;
    b.click("button.find-recipient").await;
    let found = wait_js(
        b,
        "eve's row",
        "var t = document.querySelector('#recipient-result table.recipient-send'); return t ? t.innerText : null;",
    )
    .await;
    let found = found.as_str().unwrap_or_default();
    assert!(
        found.contains("console-eve") && found.contains(&state),
        "{found}"
    );
    // The row stays through the page's refresh (every 2 s).
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let index = &row["sends"][0]["index"];
    b.wait_text(&format!("console-eve\t{index}\t{state}")).await;
    b.set_value("#find-recipient", "console-stranger").await;
    b.click("button.find-recipient").await;
    b.wait_text("console-stranger: not in this job.").await;
    // The big job, on a channel sending one a second (cancelled on the
    // SQLite run): its last recipient has not been reached.
    let last = api
        .get(&format!(
            "/v1/jobs/{}/sends?recipient=console-user-299",
            s.job
        ))
        .await;
    let job = api.get(&format!("/v1/jobs/{}", s.job)).await;
    b.goto(&format!("{}/ui/jobs#id={}", api.url, s.job)).await;
    // Its own heading: the list names it too, and the finder is the job's.
    b.wait_text(&format!("Job {} · console coupon push", s.job))
        .await;
    if job["state"] == "cancelled" {
        b.wait_text(&format!("{} cancelled", job["totals"]["cancelled"]))
            .await;
    }
    b.set_value("#find-recipient", "console-user-299").await;
    b.click("button.find-recipient").await;
    if last["sends"].as_array().is_some_and(|r| r.is_empty()) {
        b.wait_text(&format!(
            "console-user-299: in the audience at index {}, not reached yet.",
            last["recipient_index"]
        ))
        .await;
    } else {
        b.wait_text(last["sends"][0]["state"].as_str().unwrap_or("?"))
            .await;
    }
    let errors = b.errors().await;
    assert!(errors.is_empty(), "{errors:?}");
}

/// Opens `path`, waits for `needle`, checks there is no JavaScript error,
/// and saves the screenshot as `name`.
async fn visit(b: &Browser, base: &str, path: &str, needle: &str, name: &str) {
    b.goto(&format!("{base}{path}")).await;
    b.wait_text(needle).await;
    let errors = b.errors().await;
    assert!(errors.is_empty(), "{path}: JavaScript errors: {errors:?}");
    b.screenshot(name).await;
}

/// The cluster page: one row per node process with its shards and its
/// incarnation exactly as the API sends it (a decimal string: as a
/// JavaScript number its last digits would be lost), and the lease table
/// folded behind a toggle.
async fn cluster_per_node(b: &Browser, api: &Api) {
    let c = api.get("/v1/cluster").await;
    let incarnation = c["incarnation"].as_str().expect("incarnation as a string");
    assert!(incarnation.parse::<i64>().is_ok(), "{c}");
    b.wait_text(incarnation).await;
    let nodes = c["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 1, "{c}");
    let rows = b
        .run(
            "return Array.from(document.querySelectorAll('table.nodes tbody tr[data-node]'))
               .map(function (tr) { return Array.from(tr.children).map(function (td) { return td.innerText; }); });",
            json!([]),
        )
        .await;
    let rows = rows.as_array().expect("rows").clone();
    assert_eq!(rows.len(), 1, "one row per node: {rows:?}");
    let node = &nodes[0];
    assert_eq!(rows[0][0], node["node_id"], "{rows:?}");
    assert_eq!(rows[0][1], node["shards"].to_string().as_str(), "{rows:?}");
    assert_eq!(rows[0][4], node["incarnation"], "{rows:?}");
    assert_eq!(node["incarnation"], c["incarnation"], "{c}");
    assert_eq!(
        node["shards"], c["shards"],
        "one node holds every shard: {c}"
    );
    // Every lease is on the page, behind a toggle that starts closed.
    let leases = b
        .run(
            "var d = document.getElementById('lease-table');
             return [d.open, d.querySelectorAll('table.leases tbody tr').length];",
            json!([]),
        )
        .await;
    assert_eq!(
        leases,
        json!([false, c["leases"].as_array().unwrap().len()])
    );
}

/// The audit page filtered through its form shows only the entries that
/// match, newest first, as the API lists them; an action keeps its name.
async fn audit_filtered(b: &Browser, api: &Api) {
    // Cancels of jobs that do not exist, and an action no job knows.
    for path in [
        "/v1/jobs/999991:cancel",
        "/v1/jobs/999992:cancel",
        "/v1/jobs/999993:nonsense",
    ] {
        let (st, body) = api.call(reqwest::Method::POST, path, None).await;
        assert_eq!(st, 404, "{path}: {body}");
    }
    let wanted = "/v1/audit?route=/v1/jobs*&status=4xx";
    eventually("the refused cancels in the audit log", || async {
        let v = api.get(wanted).await;
        v["entries"].as_array().map_or(0, Vec::len) >= 3
    })
    .await;
    let listed = api.get(wanted).await;
    let entries = listed["entries"].as_array().unwrap();
    let want: Vec<(String, String)> = entries
        .iter()
        .map(|e| {
            (
                e["id"].to_string(),
                format!("POST {}", e["route"].as_str().unwrap()),
            )
        })
        .collect();
    assert_eq!(
        want[..3].iter().map(|w| w.1.as_str()).collect::<Vec<_>>(),
        [
            "POST /v1/jobs/{id}:*",
            "POST /v1/jobs/{id}:cancel",
            "POST /v1/jobs/{id}:cancel"
        ],
        "newest first, the action kept (an unknown one as :*): {listed}"
    );
    b.set_value("#f-route", "/v1/jobs*").await;
    b.set_value("#f-status", "4xx").await;
    b.click("#audit-filter button").await;
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let shown = loop {
        let rows = b
            .run(
                "return Array.from(document.querySelectorAll('#audit-list tr[data-id]'))
                   .map(function (tr) { return [tr.getAttribute('data-id'), tr.getAttribute('data-status'), tr.children[3].innerText]; });",
                json!([]),
            )
            .await;
        let rows: Vec<Vec<String>> = serde_json::from_value(rows).unwrap_or_default();
        if rows.len() == want.len() {
            break rows;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the filtered page shows {rows:?}, the API {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for (row, (id, action)) in shown.iter().zip(&want) {
        assert_eq!((&row[0], &row[2]), (id, action), "{shown:?}");
        assert!(row[1].starts_with('4'), "{shown:?}");
    }
    let ids: Vec<i64> = shown.iter().map(|r| r[0].parse().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");
}

/// Runs `script` in the page until it answers something other than `null`
/// or `false` (15 s at most), and gives that answer.
async fn wait_js(b: &Browser, what: &str, script: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let v = b.run(script, json!([])).await;
        if !v.is_null() && v != false {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: never; the page shows:\n{}\nerrors: {:?}",
            b.text().await,
            b.errors().await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The page's own JavaScript errors (not the browser's log, which also
/// lists the API's refusals a form is meant to show).
async fn page_errors(b: &Browser) -> Value {
    b.run("return window.__heraldErrors;", json!([])).await
}

/// The overview's live chart: deliveries per second on a left axis and
/// lateness on a right one, each with round labelled ticks from 0 past its
/// series' largest value, each line drawn on its own axis's scale, the
/// window's times along the bottom and a legend naming both.
async fn overview_axes(b: &Browser, api: &Api) {
    // Timers due at once: deliveries, and their lateness.
    for i in 0..5 {
        api.post(
            "/v1/timers",
            json!({"channel": "hooks", "recipient": format!("axes-{i}"), "delay_ms": 0,
                   "message": {"text": "axes"}}),
        )
        .await;
    }
    eventually("deliveries with lateness in the live window", || async {
        let o = api.get("/v1/overview").await;
        o["live"]["series"].as_array().is_some_and(|s| {
            s.iter()
                .any(|p| p["p99_ms"].as_f64().is_some_and(|v| v > 0.0))
        })
    })
    .await;
    b.goto(&format!("{}/ui", api.url)).await;
    let chart = wait_js(
        b,
        "the live chart with lateness",
        "var c = document.getElementById('live-chart');
         if (!c) return null;
         function ticks(side) {
           return Array.from(c.querySelectorAll('text.tick-' + side)).map(function (t) {
             return [t.textContent, +t.getAttribute('data-y')]; });
         }
         var keys = {};
         document.querySelectorAll('#live-legend .key').forEach(function (k) {
           keys[k.getAttribute('data-series')] = [k.textContent, +k.getAttribute('data-max')]; });
         if (!keys.p99_ms || !(keys.p99_ms[1] > 0) || !(keys.deliveries[1] > 0)) return null;
         var top = {};
         function up(s, y) { top[s] = top[s] === undefined ? y : Math.min(top[s], y); }
         c.querySelectorAll('polyline').forEach(function (p) {
           p.getAttribute('points').split(' ').forEach(function (xy) { up(p.getAttribute('data-series'), +xy.split(',')[1]); }); });
         c.querySelectorAll('circle.dot').forEach(function (d) { up(d.getAttribute('data-series'), +d.getAttribute('cy')); });
         return {left: ticks('left'), right: ticks('right'), time: ticks('time').map(function (t) { return t[0]; }),
                 titles: Array.from(c.querySelectorAll('text.axis-title')).map(function (t) { return t.textContent; }),
                 keys: keys, top: top};",
    )
    .await;
    assert_eq!(
        chart["titles"],
        json!(["deliveries/s", "lateness ms"]),
        "{chart}"
    );
    // Each axis: 0 first, even steps, a top at or past its largest value
    // and less than two and a half times it (a round step, not a guess).
    let axis = |side: &str, maxima: &[&str]| {
        let ticks: Vec<(f64, f64)> = chart[side]
            .as_array()
            .unwrap_or_else(|| panic!("{side} ticks: {chart}"))
            .iter()
            .map(|t| {
                (
                    t[0].as_str().unwrap().parse::<f64>().unwrap(),
                    t[1].as_f64().unwrap(),
                )
            })
            .collect();
        assert!(ticks.len() >= 3, "{side}: {chart}");
        assert_eq!(ticks[0].0, 0.0, "{side}: {chart}");
        let step = ticks[1].0 - ticks[0].0;
        for w in ticks.windows(2) {
            assert!((w[1].0 - w[0].0 - step).abs() < 1e-9, "{side}: {chart}");
            assert!(w[1].1 < w[0].1, "{side}: higher values higher up: {chart}");
        }
        let (top, top_y) = *ticks.last().unwrap();
        let max = maxima
            .iter()
            .map(|s| chart["keys"][*s][1].as_f64().unwrap())
            .fold(0.0, f64::max);
        assert!(
            top >= max && top < 2.5 * max,
            "{side}: top {top}, max {max}: {chart}"
        );
        // Every series of the axis peaks where its axis puts its largest value.
        let zero_y = ticks[0].1;
        for s in maxima {
            let peak = chart["keys"][*s][1].as_f64().unwrap();
            let want = zero_y - (zero_y - top_y) * peak / top;
            let drawn = chart["top"][*s].as_f64().unwrap();
            assert!(
                (drawn - want).abs() < 0.6,
                "{s}: drawn at {drawn}, its axis says {want}: {chart}"
            );
        }
    };
    axis("left", &["deliveries"]);
    axis("right", &["p50_ms", "p99_ms"]);
    let time = chart["time"].as_array().unwrap();
    assert_eq!(time.len(), 5, "{chart}");
    assert!(
        time.iter().all(|t| t
            .as_str()
            .is_some_and(|t| t.len() == 8 && t.as_bytes()[2] == b':')),
        "{chart}"
    );
    let legend = format!(
        "{} {}",
        chart["keys"]["deliveries"][0], chart["keys"]["p99_ms"][0]
    );
    assert!(
        legend.contains("deliveries/s (left axis)")
            && legend.contains("lateness p99, ms (right axis)"),
        "{legend}"
    );
    b.screenshot("overview-axes").await;
    assert_eq!(page_errors(b).await, json!([]));
}

/// The overview and the channels page name a channel's outcomes with the
/// API's words (the live window's, the same on `/v1/overview` and on
/// `/v1/channels`' `recent_outcomes`), in the same order.
async fn outcomes_named_alike(b: &Browser, api: &Api) {
    let names = |v: &Value| -> Vec<String> {
        let mut n: Vec<String> = v
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        n.sort();
        n
    };
    let o = api.get("/v1/overview").await;
    let hooks = o["channels"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "hooks"))
        .cloned()
        .expect("hooks on the overview");
    let ch = api.get("/v1/channels").await;
    let recent = ch["channels"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "hooks"))
        .map(|c| c["recent_outcomes"].clone())
        .expect("hooks on /v1/channels");
    let api_names = names(&hooks["outcomes"]);
    assert_eq!(api_names, names(&recent), "the API's two fields");
    let shown = "var tr = document.querySelector('#overview-channels tr[data-channel=\"hooks\"], #channel-list tr[data-channel=\"hooks\"]');
         var o = tr ? Array.from(tr.querySelectorAll('.outcome')) : [];
         return o.length ? o.map(function (e) { return [e.getAttribute('data-outcome'), e.textContent]; }) : null;";
    b.goto(&format!("{}/ui", api.url)).await;
    let on_overview = wait_js(b, "outcomes on the overview", shown).await;
    b.goto(&format!("{}/ui/channels", api.url)).await;
    let on_channels = wait_js(b, "outcomes on the channels page", shown).await;
    let order = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let (name, text) = (p[0].as_str().unwrap(), p[1].as_str().unwrap());
                let n = text.strip_prefix(name).map(str::trim);
                assert!(n.is_some_and(|n| n.parse::<u64>().is_ok()), "{text}");
                name.to_string()
            })
            .collect()
    };
    let (a, c) = (order(&on_overview), order(&on_channels));
    assert_eq!(a, c, "the same words in the same order on both pages");
    assert_eq!(a, ["delivered", "retry", "failed", "dead", "deferred"]);
    let mut sorted = a.clone();
    sorted.sort();
    assert_eq!(sorted, api_names, "the API's names, every one");
}

/// A rule updated through the API: its page shows the new version as what
/// changed from the one before, not the whole of it, which stays folded.
async fn rule_version_diff(b: &Browser, api: &Api, rule: i64) {
    let before = api.get(&format!("/v1/rules/{rule}")).await;
    let (st, after) = api
        .call(
            reqwest::Method::PUT,
            &format!("/v1/rules/{rule}"),
            Some(json!({"name": before["name"], "channel": before["channel"],
                   "message": {"text": "digest, second edition"},
                   "audience": {"users": ["console-carol", "console-erin"]},
                   "schedule": {"type": "cron", "cron": "30 8 * * 1-5", "timezone": "Europe/Paris"},
                   "deadline_secs": 3600})),
        )
        .await;
    assert_eq!(st, 200, "{after}");
    let version = after["version"].as_i64().unwrap();
    assert!(version > before["version"].as_i64().unwrap(), "{after}");
    b.goto(&format!("{}/ui/cluster", api.url)).await;
    b.goto(&format!("{}/ui/rules#id={rule}", api.url)).await;
    let rows = wait_js(
        b,
        "the new version's changes",
        &format!(
            "var v = document.querySelector('#rule-versions .version[data-version=\"{version}\"]');
             if (!v) return null;
             var rows = Array.from(v.querySelectorAll('table.diff tbody tr[data-field]')).map(function (tr) {{
               return [tr.getAttribute('data-field'), tr.getAttribute('data-kind'),
                       tr.querySelector('.diff-old').textContent, tr.querySelector('.diff-new').textContent]; }});
             var full = v.querySelector('details.full-version');
             return {{rows: rows, open: full.open, full: full.querySelector('pre').textContent,
                      first: document.querySelector('#rule-versions .version').getAttribute('data-version')}};"
        ),
    )
    .await;
    assert_eq!(rows["first"], version.to_string(), "newest first: {rows}");
    // Inline users are stored as an audience of the version's own, so the
    // version names a new one (as the API says), beside what was edited.
    let mut want = vec![json!([
        "audience.users",
        "changed",
        "",
        "with [\"console-erin\"]"
    ])];
    if before["audience_id"] != after["audience_id"] {
        want.push(json!([
            "audience_id",
            "changed",
            before["audience_id"].to_string(),
            after["audience_id"].to_string()
        ]));
    }
    want.extend([
        json!(["deadline_secs", "changed", "null", "3600"]),
        json!([
            "message.text",
            "changed",
            "\"digest\"",
            "\"digest, second edition\""
        ]),
        json!([
            "schedule.cron",
            "changed",
            "\"0 9 * * *\"",
            "\"30 8 * * 1-5\""
        ]),
    ]);
    assert_eq!(
        rows["rows"],
        Value::Array(want),
        "only what changed: {rows}"
    );
    assert_eq!(rows["open"], false, "the full version starts folded");
    let full: Value = serde_json::from_str(rows["full"].as_str().unwrap()).expect("JSON");
    assert_eq!(full["message"]["text"], "digest, second edition");
    assert_eq!(full["channel"], before["channel"]);
    b.wait_text("Full version").await;
    b.screenshot("rule-diff").await;
    assert_eq!(page_errors(b).await, json!([]));
}

/// Opens `page`, its "New …" button's form, fills `fields` (by API field)
/// and submits it.
async fn fill_form(b: &Browser, base: &str, page: &str, kind: &str, fields: &[(&str, &str)]) {
    b.goto(&format!("{base}/ui/{page}")).await;
    b.click(&format!("button.new-{kind}")).await;
    for (field, value) in fields {
        b.set_value(
            &format!("#new-{kind} [data-field=\"{field}\"] input, #new-{kind} [data-field=\"{field}\"] textarea, #new-{kind} [data-field=\"{field}\"] select"),
            value,
        )
        .await;
    }
    b.click(&format!("#new-{kind} button.create")).await;
}

/// After a form's success: the address of the new object's page, and its
/// id from it.
async fn created(b: &Browser, path: &str) -> String {
    let hash = wait_js(
        b,
        &format!("the page of the new object under {path}"),
        &format!(
            "return location.pathname === '{path}' && /^#id=./.test(location.hash) && !document.getElementById('new-dialog')
               ? decodeURIComponent(location.hash.slice(4)) : null;"
        ),
    )
    .await;
    hash.as_str().unwrap().to_string()
}

/// The text shown beside `field` in the open form of `kind`.
async fn field_error(b: &Browser, kind: &str, field: &str) -> String {
    wait_js(
        b,
        &format!("an error beside {field}"),
        &format!(
            "var p = document.querySelector('#new-{kind} [data-field=\"{field}\"] .field-error');
             return p && !p.hidden && p.textContent ? p.textContent : null;"
        ),
    )
    .await
    .as_str()
    .unwrap()
    .to_string()
}

/// A timer, a subject, a rule and a job made through the console's forms
/// exist in the API as entered; a refused form shows the API's message
/// beside the field it names, and keeps the dialog open.
async fn create_through_forms(b: &Browser, api: &Api) {
    let base = api.url.as_str();
    // Times typed into a form are read in the operator's zone.
    b.goto(&format!("{base}/ui/cluster")).await;
    b.run(
        "localStorage.setItem('herald.zone', 'Asia/Shanghai');",
        json!([]),
    )
    .await;
    let at_local = "2030-01-02T03:04";
    let at_utc = parse_ms("2030-01-01T19:04:00Z");

    // A timer, first refused: its priority is out of range.
    let timer = [
        ("channel", "hooks"),
        ("recipient", "form-frank"),
        ("fire_at", at_local),
        ("message", r#"{"text": "made in the console"}"#),
        ("idempotency_key", "form-timer-1"),
        ("priority", "12"),
    ];
    fill_form(b, base, "timers", "timer", &timer).await;
    let (st, refusal) = api
        .call(
            reqwest::Method::POST,
            "/v1/timers",
            Some(json!({"channel": "hooks", "recipient": "form-frank", "fire_at": rfc3339(at_utc),
                   "message": {"text": "made in the console"}, "idempotency_key": "form-timer-1", "priority": 12})),
        )
        .await;
    assert_eq!(
        (st, &refusal["error"]["field"]),
        (400, &json!("priority")),
        "{refusal}"
    );
    let shown = field_error(b, "timer", "priority").await;
    assert_eq!(shown, refusal["error"]["message"].as_str().unwrap());
    let open = b
        .run("return !!document.getElementById('new-dialog') && document.getElementById('new-dialog').open;", json!([]))
        .await;
    assert_eq!(open, true, "a refused form stays open");
    b.screenshot("form-error").await;
    let none = api.get("/v1/timers?idempotency_key=form-timer-1").await;
    assert_eq!(none["timers"].as_array().map(Vec::len), Some(0), "{none}");
    // Corrected, it is made and its page opens.
    b.set_value("#new-timer [data-field=\"priority\"] input", "7")
        .await;
    b.click("#new-timer button.create").await;
    let id = created(b, "/ui/timers").await;
    b.wait_text(&format!("Timer {id}")).await;
    let t = api.get(&format!("/v1/timers/{id}")).await;
    assert_eq!(
        (
            &t["channel"],
            &t["recipient"],
            &t["message"],
            &t["idempotency_key"],
            &t["priority"]
        ),
        (
            &json!("hooks"),
            &json!("form-frank"),
            &json!({"text": "made in the console"}),
            &json!("form-timer-1"),
            &json!(7)
        ),
        "{t}"
    );
    assert_eq!(parse_ms(t["due_at"].as_str().unwrap()), at_utc, "{t}");

    // A subject; the same id again is refused beside the id.
    let subject = [
        ("subject_id", "form-launch"),
        ("title", "Form launch"),
        ("start_at", at_local),
    ];
    fill_form(b, base, "reminders", "subject", &subject).await;
    assert_eq!(created(b, "/ui/reminders").await, "form-launch");
    b.wait_text("Subject form-launch · Form launch").await;
    let s = api.get("/v1/subjects/form-launch").await;
    assert_eq!(s["title"], "Form launch", "{s}");
    assert_eq!(parse_ms(s["start_at"].as_str().unwrap()), at_utc, "{s}");
    fill_form(
        b,
        base,
        "reminders",
        "subject",
        &[
            ("subject_id", "form-launch"),
            ("start_at", "2031-01-01T00:00"),
        ],
    )
    .await;
    assert!(
        field_error(b, "subject", "subject_id")
            .await
            .contains("exists already")
    );
    let s2 = api.get("/v1/subjects/form-launch").await;
    assert_eq!(
        s2["start_at"], s["start_at"],
        "a refused create moves nothing"
    );

    // A rule, first with a cron no date matches: refused on the nested
    // field, shown beside the cron.
    let rule = [
        ("name", "form digest"),
        ("channel", "hooks"),
        ("schedule.type", "cron"),
        ("schedule.cron", "0 0 30 2 *"),
        ("schedule.timezone", "Asia/Shanghai"),
        ("audience.users", "form-gina\nform-hank"),
        ("message", r#"{"text": "form digest"}"#),
    ];
    fill_form(b, base, "rules", "rule", &rule).await;
    let (st, refusal) = api
        .call(
            reqwest::Method::POST,
            "/v1/rules",
            Some(json!({"name": "form digest", "channel": "hooks",
                   "schedule": {"type": "cron", "cron": "0 0 30 2 *", "timezone": "Asia/Shanghai"},
                   "audience": {"users": ["form-gina", "form-hank"]}, "message": {"text": "form digest"}})),
        )
        .await;
    assert_eq!(
        (st, &refusal["error"]["field"]),
        (400, &json!("schedule.cron")),
        "{refusal}"
    );
    assert_eq!(
        field_error(b, "rule", "schedule.cron").await,
        refusal["error"]["message"].as_str().unwrap()
    );
    b.set_value(
        "#new-rule [data-field=\"schedule.cron\"] input",
        "30 8 * * 1-5",
    )
    .await;
    b.click("#new-rule button.create").await;
    let id = created(b, "/ui/rules").await;
    b.wait_text("Next occurrences").await;
    let r = api.get(&format!("/v1/rules/{id}")).await;
    assert_eq!(r["name"], "form digest", "{r}");
    assert_eq!(r["status"], "enabled", "{r}");
    assert_eq!(
        (
            &r["schedule"]["type"],
            &r["schedule"]["cron"],
            &r["schedule"]["timezone"]
        ),
        (
            &json!("cron"),
            &json!("30 8 * * 1-5"),
            &json!("Asia/Shanghai")
        ),
        "{r}"
    );
    assert_eq!(
        r["audience"]["users"],
        json!(["form-gina", "form-hank"]),
        "{r}"
    );

    // A job.
    let job = [
        ("name", "form push"),
        ("category", "form-test"),
        ("channel", "hooks"),
        ("users", "form-ivy, form-jack"),
        ("message", r#"{"text": "form push"}"#),
    ];
    fill_form(b, base, "jobs", "job", &job).await;
    let id = created(b, "/ui/jobs").await;
    b.wait_text("Segments by state").await;
    let j = api.get(&format!("/v1/jobs/{id}")).await;
    assert_eq!(
        (&j["name"], &j["category"], &j["channel"]),
        (&json!("form push"), &json!("form-test"), &json!("hooks")),
        "{j}"
    );
    assert_eq!(j["totals"]["total"], 2, "{j}");
    assert_eq!(page_errors(b).await, json!([]));
    b.run("localStorage.removeItem('herald.zone');", json!([]))
        .await;
    // What the browser logged of the refusals above is expected: drained.
    let _ = b.errors().await;
}

/// Which "New …" buttons the session's key is offered on the four list
/// pages.
async fn new_buttons(b: &Browser, base: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (page, kind) in [
        ("timers", "timer"),
        ("reminders", "subject"),
        ("rules", "rule"),
        ("jobs", "job"),
    ] {
        b.goto(&format!("{base}/ui/{page}")).await;
        // The hook has run once the bar is there; the button may not be.
        let has = wait_js(
            b,
            &format!("the New bar of {page}"),
            &format!("var bar = document.querySelector('.new-object'); return bar ? [!!bar.querySelector('button.new-{kind}')] : null;"),
        )
        .await;
        if has[0] == true {
            out.push(kind.to_string());
        }
    }
    out
}

/// Every page with the data `seed` made, and (when `act`) the console's
/// actions, checked through the API.
async fn pages(b: &Browser, api: &Api, s: &Seeded, act: bool, shot: &str) {
    let base = api.url.as_str();
    let shot = |page: &str| format!("{shot}{page}");

    visit(b, base, "/ui", "deliveries/s", &shot("overview")).await;
    b.wait_text("Nodes").await;
    // What falls due: the pending timer an hour out, on `hooks` (no rate),
    // in the hour's view and the day's.
    b.wait_text("Next hour, per minute").await;
    b.wait_text("hooks\t1\t0\tunlimited").await;
    b.click("button.horizon-day").await;
    b.wait_text("Next day, per 15 minutes").await;
    b.wait_text("no rate set").await;
    let errors = b.errors().await;
    assert!(errors.is_empty(), "forecast: {errors:?}");

    visit(b, base, "/ui/cluster", "shards", &shot("cluster")).await;
    cluster_per_node(b, api).await;
    visit(b, base, "/ui/audit", "POST", &shot("audit")).await;
    audit_filtered(b, api).await;

    // Channels: the configured ones; pause through the console.
    visit(b, base, "/ui/channels", "broken", &shot("channels")).await;
    // The mini-program channel has sent nothing: its token was never fetched.
    b.wait_text("not fetched yet").await;
    if act {
        b.click("tr[data-channel=\"slow\"] button.pause-channel")
            .await;
        b.wait_text("Channel slow paused.").await;
        let ch = api.get("/v1/channels").await;
        let slow = ch["channels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "slow")
            .cloned()
            .unwrap();
        assert!(slow["paused"].is_object(), "{slow}");
        api.post("/v1/channels/slow:resume", json!({})).await;
    }

    // Rules: the rule, its schedule in words; disable through the console.
    visit(b, base, "/ui/rules", "console digest", &shot("rules")).await;
    b.wait_text("every day at 09:00 · cron 0 9 * * *").await;
    if act {
        b.click(&format!("tr[data-rule=\"{}\"] button.disable-rule", s.rule))
            .await;
        b.wait_text("disabled.").await;
        let r = api.get(&format!("/v1/rules/{}", s.rule)).await;
        assert_eq!(r["status"], "disabled", "{r}");
    }
    visit(
        b,
        base,
        &format!("/ui/rules#id={}", s.rule),
        "Next occurrences",
        &shot("rule"),
    )
    .await;
    b.wait_text(if act {
        "created by admin"
    } else {
        "created by —"
    })
    .await;
    b.wait_text("expected receivers 1").await;
    if act {
        // One planned task cancelled from the console; the rule stays. The
        // rule was disabled above: enabled again, it plans afresh.
        let (st, r) = api
            .call(
                reqwest::Method::POST,
                &format!("/v1/rules/{}:enable", s.rule),
                None,
            )
            .await;
        assert_eq!(st, 200, "{r}");
        eventually("the rule's next task planned", || async {
            let t = api.get(&format!("/v1/rules/{}/tasks", s.rule)).await;
            t["tasks"]
                .as_array()
                .is_some_and(|ts| ts.iter().any(|t| t["state"] == "pending"))
        })
        .await;
        // Away and back: the same address would not load the page again.
        b.goto(&format!("{base}/ui/cluster")).await;
        b.goto(&format!("{base}/ui/rules#id={}", s.rule)).await;
        b.click("button.cancel-task").await;
        eventually("the task to be cancelled", || async {
            let t = api.get(&format!("/v1/rules/{}/tasks", s.rule)).await;
            t["tasks"]
                .as_array()
                .is_some_and(|ts| ts.iter().any(|t| t["state"] == "cancelled"))
        })
        .await;
        assert_eq!(
            api.get(&format!("/v1/rules/{}", s.rule)).await["status"],
            "enabled"
        );
    }
    b.wait_text("Versions").await;

    // Jobs: the job with its progress; cancel through the console.
    visit(b, base, "/ui/jobs", "of 300", &shot("jobs")).await;
    b.wait_text("console coupon push").await;
    // The list filtered by category: another category shows none.
    b.set_value("#f-category", "marketing").await;
    b.click("#job-filter button").await;
    b.wait_text("No job yet.").await;
    b.set_value("#f-category", "coupon-reminder").await;
    b.set_value("#f-name", "console coupon").await;
    b.click("#job-filter button").await;
    b.wait_text("of 300").await;
    visit(
        b,
        base,
        &format!("/ui/jobs#id={}", s.job),
        "Segments by state",
        &shot("job"),
    )
    .await;
    b.wait_text("category coupon-reminder").await;
    b.wait_text(if act {
        "created by admin"
    } else {
        "created by —"
    })
    .await;
    if act {
        b.click(&format!("tr[data-job=\"{}\"] button.cancel-job", s.job))
            .await;
        eventually("the job to be cancelled", || async {
            api.get(&format!("/v1/jobs/{}", s.job)).await["state"] == "cancelled"
        })
        .await;
    }

    // Reminders: the subject with its counts, then its reminders by lead.
    visit(
        b,
        base,
        "/ui/reminders",
        "Console launch",
        &shot("reminders"),
    )
    .await;
    visit(
        b,
        base,
        "/ui/reminders#id=console-launch",
        "15 min before",
        &shot("subject"),
    )
    .await;
    b.wait_text("1 subscriber(s), 1 reminder(s)").await;

    // Subscribers: the directory, then one subscriber's subscribe grants.
    visit(
        b,
        base,
        "/ui/subscribers",
        "console-ann",
        &shot("subscribers"),
    )
    .await;
    visit(
        b,
        base,
        "/ui/subscribers#id=console-ann",
        "TPL_CONSOLE",
        &shot("subscriber"),
    )
    .await;
    b.wait_text("long-term").await;

    // Templates: the list, a template's variants, and a preview in Chinese
    // at Shanghai time.
    visit(
        b,
        base,
        "/ui/templates",
        "console-welcome",
        &shot("templates"),
    )
    .await;
    visit(
        b,
        base,
        "/ui/templates#name=console-welcome",
        "Variant zh",
        &shot("template"),
    )
    .await;
    b.set_value("#f-locale", "zh-Hans-CN").await;
    b.set_value("#f-timezone", "Asia/Shanghai").await;
    b.set_value("#f-data", r#"{"name": "Li", "at": "2026-11-25T02:00:00Z"}"#)
        .await;
    b.click("button.preview-template").await;
    b.wait_text("欢迎 Li，10:00 开始").await;

    // A timer's detail, with its message and send log; cancel it.
    visit(
        b,
        base,
        &format!("/ui/timers#id={}", s.pending_timer),
        "coupon <b>reminder</b>",
        &shot("timer"),
    )
    .await;
    // Times in the zone the operator chose: the due time at Shanghai's
    // wall clock once picked, and in the header.
    let due = api.get(&format!("/v1/timers/{}", s.pending_timer)).await["due_at"]
        .as_str()
        .map(parse_ms)
        .expect("due_at");
    let shanghai = rfc3339(due + 8 * 3_600_000)[..19].replace('T', " ");
    b.run(
        "localStorage.setItem('herald.zone', 'Asia/Shanghai');",
        json!([]),
    )
    .await;
    b.goto(&format!("{base}/ui/cluster")).await;
    b.goto(&format!("{base}/ui/timers#id={}", s.pending_timer))
        .await;
    b.wait_text(&shanghai).await;
    let zone = b
        .run("return document.getElementById('zone').value;", json!([]))
        .await;
    assert_eq!(zone, "Asia/Shanghai");
    b.run("localStorage.removeItem('herald.zone');", json!([]))
        .await;
    if act {
        b.click("button.cancel-timer").await;
        eventually("the timer to be cancelled", || async {
            api.get(&format!("/v1/timers/{}", s.pending_timer)).await["state"] == "cancelled"
        })
        .await;
    }
    visit(b, base, "/ui/timers", "console-alice", &shot("timers")).await;

    visit(
        b,
        base,
        "/ui/dead-letters",
        "console-bob",
        &shot("dead-letters"),
    )
    .await;
    // Select-all picks every row of the page.
    b.click("input.pick-all").await;
    let unpicked = b
        .run(
            "return document.querySelectorAll('#dl-list input.pick:not(:checked)').length;",
            json!([]),
        )
        .await;
    assert_eq!(unpicked, 0);
    if act {
        b.click("button.replay-one").await;
        eventually("the dead timer to be replayed", || async {
            let t = api.get(&format!("/v1/timers/{}", s.dead_timer)).await;
            t["state"] == "pending" || t["attempts"].as_i64() > Some(1)
        })
        .await;
    }
}

/// The whole suite on SQLite, on a protected node: log in through the form,
/// every page and action under the session, CSRF refused without the token.
#[tokio::test]
async fn console_on_sqlite_with_login() {
    let Some(b) = Browser::start().await else {
        return;
    };
    let mock = Mock::start(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("data").join("herald.db");
    let server = Server::start_with_env(
        &format!("sqlite://{}", db.display()),
        dir,
        &config(&mock),
        &[("HERALD_ADMIN_KEY", ADMIN)],
    )
    .await;
    let api = Api::new(&server.url, Some(ADMIN));
    let seeded = seed(&api).await;

    // Without a session, a page sends the browser to the login form.
    b.goto(&format!("{}/ui/jobs", server.url)).await;
    b.wait_text("API key").await;
    let errors = b.errors().await;
    assert!(errors.is_empty(), "{errors:?}");
    b.screenshot("login").await;
    // A wrong key is refused.
    b.set_value("#key", "hrk_1_notakey").await;
    b.click("#login-form button").await;
    b.wait_text("unknown, revoked or expired").await;
    // The admin key opens a session.
    b.set_value("#key", ADMIN).await;
    b.click("#login-form button").await;
    b.wait_text("Last 60 seconds").await;
    let cookie_visible = b.run("return document.cookie;", json!([])).await;
    assert_eq!(cookie_visible, "", "the session cookie must be HttpOnly");

    // A state change under the cookie without the CSRF token: 403 csrf;
    // with it, it passes the guard.
    let refused = b
        .run_async(
            "var done = arguments[0];
             fetch('/v1/rules/999999:disable', {method: 'POST', credentials: 'same-origin'})
               .then(function (r) { return r.json().then(function (j) { done([r.status, j.error.code]); }); });",
        )
        .await;
    assert_eq!(refused, json!([403, "csrf"]));
    let with_token = b
        .run_async(
            "var done = arguments[0];
             var t = document.querySelector('meta[name=\"csrf-token\"]').content;
             fetch('/v1/rules/999999:disable', {method: 'POST', credentials: 'same-origin', headers: {'X-CSRF-Token': t}})
               .then(function (r) { done(r.status); });",
        )
        .await;
    assert_eq!(with_token, 404);
    // What the steps above logged (the refused login's 401, the refusals
    // just made, the overview of a build without it) is expected: drained.
    let _ = b.errors().await;

    pages(&b, &api, &seeded, true, "").await;
    overview_axes(&b, &api).await;
    outcomes_named_alike(&b, &api).await;
    rule_version_diff(&b, &api, seeded.rule).await;
    user_page(&b, &api, &seeded).await;
    subject_outcomes(&b, &api).await;
    job_identity(&b, &api, &seeded).await;
    create_through_forms(&b, &api).await;
    assert_eq!(
        new_buttons(&b, &server.url).await,
        ["timer", "subject", "rule", "job"]
    );

    // Logging out ends the session in the browser.
    b.goto(&format!("{}/ui/cluster", server.url)).await;
    b.click("form.logout button").await;
    b.wait_text("API key").await;

    // A read-only key: the pages it cannot read are not offered, and one
    // opened by its address says why.
    let viewer = api
        .post(
            "/v1/keys",
            json!({"name": "viewer", "tenant": "default", "scopes": ["read"]}),
        )
        .await["key"]
        .as_str()
        .expect("a key")
        .to_string();
    b.set_value("#key", &viewer).await;
    b.click("#login-form button").await;
    b.wait_text("Last 60 seconds").await;
    let nav = b
        .run(
            "return Array.from(document.querySelectorAll('header nav a')).map(function (a) { return a.textContent; }).join(',');",
            json!([]),
        )
        .await;
    let nav = nav.as_str().unwrap_or_default().to_string();
    assert!(nav.contains("Timers") && nav.contains("API"), "{nav}");
    assert!(
        !nav.contains("Channels") && !nav.contains("Cluster"),
        "{nav}"
    );
    b.goto(&format!("{}/ui/cluster", server.url)).await;
    b.wait_text("needs the admin key").await;
    // It is offered no form to create anything.
    assert!(new_buttons(&b, &server.url).await.is_empty());
    // A key that writes timers and subjects, not campaigns, gets their
    // buttons only.
    let writer = api
        .post(
            "/v1/keys",
            json!({"name": "writer", "tenant": "default", "scopes": ["read", "write"]}),
        )
        .await["key"]
        .as_str()
        .expect("a key")
        .to_string();
    b.goto(&format!("{}/ui/jobs", server.url)).await;
    b.click("form.logout button").await;
    b.wait_text("API key").await;
    b.set_value("#key", &writer).await;
    b.click("#login-form button").await;
    b.wait_text("Last 60 seconds").await;
    assert_eq!(new_buttons(&b, &server.url).await, ["timer", "subject"]);
    b.quit().await;
}

/// Every page loads with data on PostgreSQL (open mode: no login), and a
/// user's, a failed subject's and a job's pages show what they read.
#[tokio::test]
async fn console_smoke_on_postgres() {
    let Some((_db, url)) = common::pg_database("console") else {
        eprintln!("PostgreSQL not installed: console smoke on PostgreSQL skipped");
        return;
    };
    let Some(b) = Browser::start().await else {
        return;
    };
    let mock = Mock::start(&[]).await;
    let server = Server::start_on(&url, tempfile::tempdir().unwrap(), &config(&mock)).await;
    let api = Api::new(&server.url, None);
    let seeded = seed(&api).await;
    pages(&b, &api, &seeded, false, "pg-").await;
    // The pages whose queries each store answers its own way.
    user_page(&b, &api, &seeded).await;
    subject_outcomes(&b, &api).await;
    job_identity(&b, &api, &seeded).await;
    b.quit().await;
}

/// The README's screenshots (`readme-*.png`), taken of a node with work in
/// every state: a few thousand timers done, pending, dead, failed and
/// cancelled, a campaign still sending, rules and reminders. The overview
/// must count them before its picture is taken.
#[tokio::test]
async fn readme_screenshots_of_a_busy_node() {
    let Some(b) = Browser::start().await else {
        return;
    };
    let mock = Mock::start(&[]).await;
    let refusing = Mock::start(&["--permanent-status", "400"]).await;
    let extra = format!(
        "{}\n[[channels]]\nname = \"partner\"\nkind = \"webhook\"\nurl = \"{}\"\n",
        config(&mock),
        refusing.hook()
    );
    let server = Server::start(&extra).await;
    let api = Api::new(&server.url, None);
    let now = now_ms();
    let lines = |n: usize, f: &dyn Fn(usize) -> Value| -> String {
        (0..n).map(|i| format!("{}\n", f(i))).collect()
    };
    let batches: [(usize, &dyn Fn(usize) -> Value); 4] = [
        (2500, &|i| {
            json!({"channel": "hooks", "recipient": format!("user-{i}"), "delay_ms": 0,
                   "message": {"text": "Your coupon opens in 5 minutes"}})
        }),
        (1500, &|i| {
            json!({"channel": "hooks", "recipient": format!("user-{i}"),
                   "fire_at": rfc3339(now + 3_600_000 + i as i64 * 1_000),
                   "message": {"text": "Flash sale starts soon"}})
        }),
        (300, &|i| {
            json!({"channel": "broken", "recipient": format!("user-{i}"), "delay_ms": 0,
                   "message": {"text": "Order shipped"}})
        }),
        (120, &|i| {
            json!({"channel": "partner", "recipient": format!("user-{i}"), "delay_ms": 0,
                   "message": {"text": "Points expiring"}})
        }),
    ];
    for (n, f) in batches {
        let (st, answers) = server.bulk(&lines(n, f)).await;
        assert_eq!(st, 200, "{answers:?}");
        assert_eq!(answers.len(), n);
    }
    // Due in ten minutes on a channel sending one a second: it falls behind.
    let (st, answers) = server
        .bulk(&lines(240, &|i| {
            json!({"channel": "slow", "recipient": format!("shopper-{i}"),
                   "fire_at": rfc3339(now + 600_000 + i as i64 * 100),
                   "message": {"text": "Your coupon opens in 5 minutes"}})
        }))
        .await;
    assert_eq!(st, 200, "{answers:?}");
    // Cancelled: pending ones withdrawn.
    for i in 0..80 {
        let v = api
            .post(
                "/v1/timers",
                json!({"channel": "hooks", "recipient": format!("late-{i}"),
                       "fire_at": rfc3339(now + 7_200_000), "message": {"text": "withdrawn"}}),
            )
            .await;
        let id = v["id"].as_i64().unwrap();
        let (st, _) = server.delete(&format!("/v1/timers/{id}")).await;
        assert_eq!(st, 200);
    }
    // A campaign that is still sending when the pictures are taken.
    let users: Vec<String> = (0..3000).map(|i| format!("follower-{i}")).collect();
    api.post(
        "/v1/jobs",
        json!({"channel": "slow", "users": users, "message": {"text": "Double 11: 20% off today"}}),
    )
    .await;
    for (name, cron) in [
        ("weekday digest", "0 9 * * 1-5"),
        ("monthly statement", "0 10 1 * *"),
    ] {
        api.post(
            "/v1/rules",
            json!({"name": name, "channel": "hooks", "message": {"text": name},
                   "audience": {"users": ["ops-lead", "ops-team"]},
                   "schedule": {"type": "cron", "cron": cron, "timezone": "Asia/Shanghai"}}),
        )
        .await;
    }
    api.call(
        reqwest::Method::PUT,
        "/v1/subjects/coupon-1111",
        Some(json!({"start_at": rfc3339(now + 86_400_000), "title": "Coupon 11.11"})),
    )
    .await;
    for i in 0..40 {
        api.post(
            "/v1/reminders",
            json!({"user_id": format!("shopper-{i}"), "subject_id": "coupon-1111",
                   "channel": "hooks", "channel_type": "app", "lead_minutes": 15}),
        )
        .await;
    }
    // The sampled counts see every state before the overview is pictured.
    common::wait_for("every state counted", Duration::from_secs(60), || async {
        let o = api.get("/v1/overview").await;
        let n = |s: &str| o["timers"][s].as_u64().unwrap_or(0);
        n("done") >= 2500 && n("dead") >= 300 && n("failed") >= 120 && n("cancelled") >= 80
    })
    .await;
    let base = api.url.as_str();
    visit(&b, base, "/ui", "cannot keep up", "readme-overview").await;
    let done = api.get("/v1/timers?state=done&limit=1").await;
    let id = done["timers"][0]["id"].as_i64().expect("a done timer");
    visit(
        &b,
        base,
        &format!("/ui/timers#id={id}"),
        "Your coupon opens",
        "readme-timer",
    )
    .await;
    visit(&b, base, "/ui/dead-letters", "user-", "readme-dead-letters").await;
    visit(&b, base, "/ui/jobs", "of 3000", "readme-jobs").await;
    b.quit().await;
}
