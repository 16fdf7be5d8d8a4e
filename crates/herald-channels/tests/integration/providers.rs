//! The wechat, wecom and fcm channels and the shared token cache, against
//! small provider fakes on loopback written here (the full mocks live in
//! `herald-mock`; these fakes only do what each test needs).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use herald_channels::token_cache::{FetchHint, FetchedToken};
use herald_channels::{
    BuildContext, CallbackError, CallbackEvent, Channel, ChannelConfig, CommonSettings, Delivery,
    FcmChannel, FcmConfig, FinalStatus, MemoryVault, ProviderConfig, RecallError, SecretSource,
    SendOutcome, TokenCache, TokenCacheOptions, TokenMode, TokenVault, WechatChannel, WechatConfig,
    WecomChannel, WecomConfig, build,
};
use herald_core::{Clock, ManualClock, SystemClock, TimerKind};
use parking_lot::Mutex;
use serde_json::{Value, json};

const WX_SECRET: &str = "wx-app-secret-DO-NOT-LEAK";
const WECOM_SECRET: &str = "wecom-corp-secret-DO-NOT-LEAK";

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    format!("http://{addr}")
}

fn delivery(recipient: &str, message: &str, key: &str) -> Delivery {
    Delivery {
        timer_id: 7,
        kind: TimerKind::Timer,
        due_at: 0,
        fired_at: 0,
        attempt: 1,
        recipient: recipient.into(),
        message: message.into(),
        idempotency_key: key.into(),
        traceparent: None,
    }
}

fn error_of(o: &SendOutcome) -> String {
    match o {
        SendOutcome::Delivered { .. } => String::new(),
        SendOutcome::Retryable { error, .. }
        | SendOutcome::Permanent { error, .. }
        | SendOutcome::Throttled { error, .. } => error.clone(),
    }
}

fn ctx(vault: Arc<dyn TokenVault>, node: &str) -> BuildContext {
    BuildContext {
        vault,
        node_id: node.into(),
    }
}

fn opts(clock: Arc<dyn Clock>) -> TokenCacheOptions {
    TokenCacheOptions {
        clock,
        poll_interval: Duration::from_millis(20),
        ..TokenCacheOptions::default()
    }
}

// ---------------------------------------------------------------- WeChat fake

#[derive(Default)]
struct Wx {
    /// Tokens the send endpoint accepts, and those it calls expired.
    valid: HashSet<String>,
    expired: HashSet<String>,
    /// The token stable_token hands out in normal mode.
    stable: Option<String>,
    seq: u64,
    token_fetches: usize,
    stable_fetches: usize,
    forced: usize,
    /// errcode the token endpoints answer with, if set.
    token_errcode: Option<i64>,
    /// errcodes the next sends answer with.
    next_codes: VecDeque<i64>,
    /// Every send answers 40001 whatever the token.
    reject_all_tokens: bool,
    /// Milliseconds a token fetch takes.
    fetch_delay_ms: u64,
    /// HTTP status the next send answers with.
    next_http: Option<u16>,
    sends: Vec<Value>,
    raw_queries: Vec<String>,
}

type WxState = Arc<Mutex<Wx>>;

impl Wx {
    fn issue(&mut self) -> String {
        self.seq += 1;
        let t = format!("wx-token-{}", self.seq);
        self.valid.insert(t.clone());
        t
    }

    /// Every token issued so far answers 42001 from now on.
    fn expire_all(&mut self) {
        let all: Vec<String> = self.valid.drain().collect();
        self.expired.extend(all);
    }
}

fn wx_token_answer(t: String) -> Response {
    axum::Json(json!({"access_token": t, "expires_in": 7200})).into_response()
}

async fn wx_classic_token(
    State(s): State<WxState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let delay = s.lock().fetch_delay_ms;
    tokio::time::sleep(Duration::from_millis(delay)).await;
    let mut w = s.lock();
    w.token_fetches += 1;
    if q.get("secret").map(String::as_str) != Some(WX_SECRET) {
        return axum::Json(json!({"errcode": 40125, "errmsg": "invalid appsecret"}))
            .into_response();
    }
    if let Some(code) = w.token_errcode {
        return axum::Json(json!({"errcode": code, "errmsg": "injected"})).into_response();
    }
    let t = w.issue();
    wx_token_answer(t)
}

async fn wx_stable_token(State(s): State<WxState>, axum::Json(b): axum::Json<Value>) -> Response {
    let delay = s.lock().fetch_delay_ms;
    tokio::time::sleep(Duration::from_millis(delay)).await;
    let mut w = s.lock();
    w.stable_fetches += 1;
    if b["secret"] != WX_SECRET || b["grant_type"] != "client_credential" {
        return axum::Json(json!({"errcode": 40125, "errmsg": "invalid appsecret"}))
            .into_response();
    }
    if let Some(code) = w.token_errcode {
        return axum::Json(json!({"errcode": code, "errmsg": "injected"})).into_response();
    }
    let force = b["force_refresh"] == true;
    if force {
        w.forced += 1;
    }
    let t = match (&w.stable, force) {
        (Some(t), false) => t.clone(),
        _ => {
            let t = w.issue();
            w.stable = Some(t.clone());
            t
        }
    };
    wx_token_answer(t)
}

async fn wx_send(
    State(s): State<WxState>,
    Query(q): Query<HashMap<String, String>>,
    raw: axum::extract::RawQuery,
    axum::Json(b): axum::Json<Value>,
) -> Response {
    let mut w = s.lock();
    w.raw_queries.push(raw.0.unwrap_or_default());
    if let Some(status) = w.next_http.take() {
        return (StatusCode::from_u16(status).unwrap(), "upstream trouble").into_response();
    }
    let token = q.get("access_token").cloned().unwrap_or_default();
    if w.reject_all_tokens {
        return axum::Json(json!({"errcode": 40001, "errmsg": "invalid credential rid: x"}))
            .into_response();
    }
    if w.expired.contains(&token) {
        return axum::Json(json!({"errcode": 42001, "errmsg": "access_token expired rid: x"}))
            .into_response();
    }
    if !w.valid.contains(&token) {
        return axum::Json(json!({"errcode": 40001, "errmsg": "invalid credential rid: x"}))
            .into_response();
    }
    if let Some(code) = w.next_codes.pop_front() {
        return axum::Json(json!({"errcode": code, "errmsg": "injected rid: x"})).into_response();
    }
    w.sends.push(b);
    let msgid = 200_000_000 + w.sends.len() as u64;
    axum::Json(json!({"errcode": 0, "errmsg": "ok", "msgid": msgid})).into_response()
}

async fn wechat_fake() -> (String, WxState) {
    let s: WxState = Arc::default();
    let app = Router::new()
        .route("/cgi-bin/token", get(wx_classic_token))
        .route("/cgi-bin/stable_token", post(wx_stable_token))
        .route("/cgi-bin/message/template/send", post(wx_send))
        .with_state(s.clone());
    (serve(app).await, s)
}

/// Settings every test channel shares: its name and a short timeout.
fn common(name: &str) -> CommonSettings {
    let mut c = CommonSettings::named(name);
    c.timeout_ms = 2_000;
    c
}

fn wechat_parts(base: &str, mode: TokenMode) -> (CommonSettings, WechatConfig) {
    let wx = WechatConfig {
        appid: "wxtestappid".into(),
        secret: SecretSource::Inline(WX_SECRET.into()),
        token_mode: mode,
        api_base: Some(base.into()),
        ca_file: None,
        callback_token: None,
        encoding_aes_key: None,
        allow_insecure_http: false,
    };
    (common("wx"), wx)
}

fn wechat_cfg(base: &str, mode: TokenMode) -> ChannelConfig {
    let (common, wx) = wechat_parts(base, mode);
    ChannelConfig {
        common,
        provider: ProviderConfig::Wechat(wx),
    }
}

const TEMPLATE: &str =
    r#"{"template_id":"TPL1","url":"https://example.com/x","data":{"first":{"value":"hello"}}}"#;

async fn wechat(base: &str, mode: TokenMode) -> WechatChannel {
    let c = ctx(Arc::new(MemoryVault::new()), "n1");
    let (common, wx) = wechat_parts(base, mode);
    WechatChannel::with_options(&common, &wx, &c, opts(Arc::new(SystemClock))).unwrap()
}

#[tokio::test]
async fn wechat_delivers_with_msgid_and_client_msg_id() {
    let (base, s) = wechat_fake().await;
    let ch = build(
        &wechat_cfg(&base, TokenMode::Stable),
        &BuildContext::local(),
    )
    .unwrap();
    let out = ch.send(&delivery("oUser1", TEMPLATE, "tmr-7-a1")).await;
    assert_eq!(
        out,
        SendOutcome::Delivered {
            provider_msgid: Some("200000001".into()),
            status: Some(0)
        }
    );
    {
        let w = s.lock();
        assert_eq!(w.stable_fetches, 1);
        assert_eq!(w.token_fetches, 0);
        let b = &w.sends[0];
        assert_eq!(b["touser"], "oUser1");
        assert_eq!(b["template_id"], "TPL1");
        assert_eq!(b["client_msg_id"], "tmr-7-a1");
        assert_eq!(b["url"], "https://example.com/x");
        assert_eq!(b["data"]["first"]["value"], "hello");
    }
    let status = ch.provider_status().await;
    assert!(status.token_valid_until.unwrap() > SystemClock.now_ms() + 7_000_000);
    // A long key is hashed to 32 characters, the same way every time.
    let long = "k".repeat(100);
    ch.send(&delivery("oUser1", TEMPLATE, &long)).await;
    ch.send(&delivery("oUser1", TEMPLATE, &long)).await;
    let w = s.lock();
    let id = w.sends[1]["client_msg_id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 32);
    assert_eq!(w.sends[2]["client_msg_id"], id.as_str());
    assert_eq!(w.stable_fetches, 1, "the token is reused");
}

#[tokio::test]
async fn wechat_classifies_every_error_class() {
    let (base, s) = wechat_fake().await;
    let ch = wechat(&base, TokenMode::Classic).await;
    let d = delivery("oUser1", TEMPLATE, "k1");
    for (code, class) in [
        (-1, "retry"),
        (45009, "throttled"),
        (40003, "permanent"),
        (43004, "permanent"),
        (43019, "permanent"),
        (40037, "permanent"),
        (47001, "permanent"),
    ] {
        s.lock().next_codes.push_back(code);
        let out = ch.send(&d).await;
        assert_eq!(out.class(), class, "errcode {code}: {out:?}");
        assert!(error_of(&out).contains(&code.to_string()), "{out:?}");
    }
    s.lock().next_http = Some(502);
    assert_eq!(ch.send(&d).await.class(), "retry");
    // Validation up front: nothing is sent.
    let before = s.lock().raw_queries.len();
    let out = ch.send(&delivery("oUser1", r#"{"data":{}}"#, "k")).await;
    assert_eq!(out.class(), "permanent");
    assert!(error_of(&out).contains("template_id"));
    let out = ch
        .send(&delivery("oUser1", r#"{"template_id":"T"}"#, "k"))
        .await;
    assert!(error_of(&out).contains("data"));
    assert_eq!(s.lock().raw_queries.len(), before);
    assert_eq!(s.lock().token_fetches, 1);
}

#[tokio::test]
async fn wechat_token_endpoint_failures() {
    let (base, s) = wechat_fake().await;
    let ch = wechat(&base, TokenMode::Stable).await;
    let d = delivery("oUser1", TEMPLATE, "k1");
    s.lock().token_errcode = Some(45009);
    let out = ch.send(&d).await;
    assert_eq!(out.class(), "throttled", "{out:?}");
    s.lock().token_errcode = Some(40164);
    let out = ch.send(&d).await;
    assert_eq!(out.class(), "retry", "{out:?}");
    s.lock().token_errcode = None;
    assert_eq!(ch.send(&d).await.class(), "delivered");

    // A wrong secret, over classic GET (secret in the query string): the
    // error names the code but never the secret.
    let (common, mut wx) = wechat_parts(&base, TokenMode::Classic);
    wx.secret = SecretSource::Inline("wrong-secret-value".into());
    let ch = WechatChannel::new(&common, &wx, &BuildContext::local()).unwrap();
    let out = ch.send(&d).await;
    assert_eq!(out.class(), "retry");
    assert!(error_of(&out).contains("40125"));
    assert!(!error_of(&out).contains("wrong-secret-value"));
}

#[tokio::test]
async fn wechat_refreshes_a_rejected_token_once_and_retries_once() {
    // Classic: the rejected token is replaced by one new fetch.
    let (base, s) = wechat_fake().await;
    let ch = wechat(&base, TokenMode::Classic).await;
    let d = delivery("oUser1", TEMPLATE, "k1");
    assert_eq!(ch.send(&d).await.class(), "delivered");
    s.lock().expire_all();
    let out = ch.send(&d).await;
    assert_eq!(out.class(), "delivered", "{out:?}");
    assert_eq!(s.lock().token_fetches, 2);

    // Stable: normal mode hands back the rejected token, so the channel forces.
    let (base, s) = wechat_fake().await;
    let ch = wechat(&base, TokenMode::Stable).await;
    assert_eq!(ch.send(&d).await.class(), "delivered");
    s.lock().expire_all();
    assert_eq!(ch.send(&d).await.class(), "delivered");
    {
        let w = s.lock();
        assert_eq!((w.stable_fetches, w.forced), (3, 1));
    }

    // Rejected again after the refresh: retryable, and only one refresh.
    let (base, s) = wechat_fake().await;
    let ch = wechat(&base, TokenMode::Classic).await;
    s.lock().reject_all_tokens = true;
    let out = ch.send(&d).await;
    assert_eq!(out.class(), "retry", "{out:?}");
    assert_eq!(s.lock().token_fetches, 2);
    assert_eq!(s.lock().raw_queries.len(), 2);
}

#[tokio::test]
async fn wechat_token_expiry_mid_run_means_exactly_one_refresh() {
    let (base, s) = wechat_fake().await;
    let ch = Arc::new(wechat(&base, TokenMode::Classic).await);
    s.lock().fetch_delay_ms = 50;
    assert_eq!(
        ch.send(&delivery("o0", TEMPLATE, "warm")).await.class(),
        "delivered"
    );
    s.lock().expire_all();
    let mut tasks = Vec::new();
    for i in 0..50 {
        let ch = ch.clone();
        tasks.push(tokio::spawn(async move {
            ch.send(&delivery(&format!("o{i}"), TEMPLATE, &format!("k{i}")))
                .await
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().class(), "delivered");
    }
    let w = s.lock();
    assert_eq!(w.token_fetches, 2, "one fetch at start, one refresh");
    assert_eq!(w.sends.len(), 51, "no message lost");
}

#[tokio::test]
async fn wechat_refreshes_before_expiry_once_under_concurrency() {
    let (base, s) = wechat_fake().await;
    let clock = ManualClock::new(1_700_000_000_000);
    let c = ctx(Arc::new(MemoryVault::new()), "n1");
    let ch = Arc::new(
        WechatChannel::with_options(
            &common("wx"),
            &wechat_parts(&base, TokenMode::Classic).1,
            &c,
            opts(Arc::new(clock.clone())),
        )
        .unwrap(),
    );
    assert_eq!(
        ch.send(&delivery("o", TEMPLATE, "a")).await.class(),
        "delivered"
    );
    // 4 minutes left: inside the 5-minute margin.
    clock.advance((7200 - 240) * 1000);
    let mut tasks = Vec::new();
    for i in 0..50 {
        let ch = ch.clone();
        tasks.push(tokio::spawn(async move {
            ch.send(&delivery("o", TEMPLATE, &format!("k{i}"))).await
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().class(), "delivered");
    }
    assert_eq!(s.lock().token_fetches, 2);
    let until = ch.provider_status().await.token_valid_until.unwrap();
    assert_eq!(until, clock.now_ms() + 7_200_000);
}

#[tokio::test]
async fn wechat_transport_errors_are_retryable_and_hide_the_token() {
    // The send path times out; the token was fetched fine.
    let app = Router::new()
        .route(
            "/cgi-bin/stable_token",
            post(|| async {
                axum::Json(json!({"access_token": "SECRET-TOKEN-VALUE", "expires_in": 7200}))
            }),
        )
        .route(
            "/cgi-bin/message/template/send",
            post(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        );
    let slow = serve(app).await;
    let (mut common, wx) = wechat_parts(&slow, TokenMode::Stable);
    common.timeout_ms = 200;
    let ch = WechatChannel::new(&common, &wx, &BuildContext::local()).unwrap();
    let out = ch.send(&delivery("o", TEMPLATE, "k")).await;
    assert_eq!(out.class(), "retry", "{out:?}");
    assert!(error_of(&out).contains("timeout"));
    assert!(!error_of(&out).contains("SECRET-TOKEN-VALUE"));
    // Nothing listening: connection errors, no secret in the text.
    let mut cfg = wechat_cfg("http://127.0.0.1:1", TokenMode::Classic);
    cfg.common.timeout_ms = 500;
    let ProviderConfig::Wechat(wx) = &cfg.provider else {
        unreachable!()
    };
    let ch = WechatChannel::new(&cfg.common, wx, &BuildContext::local()).unwrap();
    let out = ch.send(&delivery("o", TEMPLATE, "k")).await;
    assert_eq!(out.class(), "retry");
    assert!(!error_of(&out).contains(WX_SECRET), "{out:?}");
    assert!(!format!("{ch:?}").contains(WX_SECRET));
    assert!(!format!("{cfg:?}").contains(WX_SECRET));
    assert!(format!("{cfg:?}").contains("<redacted>"));
}

// ----------------------------------------------------------- token cache

type FetchFuture = std::pin::Pin<
    Box<dyn Future<Output = Result<FetchedToken, herald_channels::TokenError>> + Send>,
>;

/// A fetch that takes `delay_ms` and hands out `tok-N`, counting calls in `n`.
fn counting_fetch(n: &Arc<AtomicUsize>, delay_ms: u64) -> impl FnOnce(FetchHint) -> FetchFuture {
    let n = n.clone();
    move |_hint| {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            let i = n.fetch_add(1, Ordering::SeqCst);
            Ok(FetchedToken {
                token: format!("tok-{i}"),
                expires_in_secs: 7200,
            })
        })
    }
}

#[tokio::test]
async fn token_cache_single_flight_in_process() {
    let cache = Arc::new(TokenCache::new(
        "wechat:x",
        Arc::new(MemoryVault::new()),
        "n1",
        opts(Arc::new(SystemClock)),
    ));
    let n = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..256 {
        let cache = cache.clone();
        let n = n.clone();
        tasks.push(tokio::spawn(async move {
            cache.get(counting_fetch(&n, 30)).await.unwrap()
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), "tok-0");
    }
    assert_eq!(n.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn token_cache_two_nodes_one_vault_one_fetch() {
    let vault: Arc<dyn TokenVault> = Arc::new(MemoryVault::new());
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let a = Arc::new(TokenCache::new(
        "k",
        vault.clone(),
        "node-a",
        opts(clock.clone()),
    ));
    let b = Arc::new(TokenCache::new("k", vault.clone(), "node-b", opts(clock)));
    let n = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..40 {
        let cache = if i % 2 == 0 { a.clone() } else { b.clone() };
        let n = n.clone();
        tasks.push(tokio::spawn(async move {
            cache.get(counting_fetch(&n, 150)).await.unwrap()
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), "tok-0");
    }
    assert_eq!(n.load(Ordering::SeqCst), 1, "one fetch for both nodes");
    assert_eq!(a.valid_until().await, b.valid_until().await);
}

#[tokio::test]
async fn token_cache_compare_and_expire_spares_a_newer_token() {
    let vault: Arc<dyn TokenVault> = Arc::new(MemoryVault::new());
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let a = TokenCache::new("k", vault.clone(), "node-a", opts(clock.clone()));
    let b = TokenCache::new("k", vault.clone(), "node-b", opts(clock));
    let n = Arc::new(AtomicUsize::new(0));
    let old = a.get(counting_fetch(&n, 0)).await.unwrap();
    assert_eq!(b.get(counting_fetch(&n, 0)).await.unwrap(), old);
    // Node b sees the token fail and refreshes.
    b.invalidate(&old).await;
    let new = b.get(counting_fetch(&n, 0)).await.unwrap();
    assert_ne!(new, old);
    // Node a now sees the old one fail too: that must not expire the new one.
    a.invalidate(&old).await;
    assert_eq!(a.get(counting_fetch(&n, 0)).await.unwrap(), new);
    assert_eq!(n.load(Ordering::SeqCst), 2);
    // And an old token reported late on b changes nothing either.
    b.invalidate(&old).await;
    assert_eq!(b.get(counting_fetch(&n, 0)).await.unwrap(), new);
    assert_eq!(n.load(Ordering::SeqCst), 2);
    let stored = vault.load("k").await.unwrap().unwrap();
    assert_eq!(stored.token, new);
    assert!(!format!("{stored:?}").contains(&new));
}

#[tokio::test]
async fn token_cache_waits_for_the_lock_holder_instead_of_fetching() {
    let vault: Arc<dyn TokenVault> = Arc::new(MemoryVault::new());
    let now = SystemClock.now_ms();
    // Another node holds the refresh lock and stores a token 100 ms later.
    assert!(vault.try_lock("k", "other", now, 30_000).await.unwrap());
    let v2 = vault.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let t = herald_channels::StoredToken {
            token: "from-other".into(),
            expires_at: now + 7_200_000,
            fetched_at: now,
        };
        v2.save("k", &t).await.unwrap();
        v2.unlock("k", "other").await.unwrap();
    });
    let c = TokenCache::new("k", vault, "me", opts(Arc::new(SystemClock)));
    let n = Arc::new(AtomicUsize::new(0));
    assert_eq!(c.get(counting_fetch(&n, 0)).await.unwrap(), "from-other");
    assert_eq!(n.load(Ordering::SeqCst), 0);
}

// ----------------------------------------------------------------- WeCom fake

#[derive(Default)]
struct Wc {
    seq: u64,
    token_fetches: usize,
    valid: HashSet<String>,
    expired: HashSet<String>,
    invalid_users: HashSet<String>,
    known_parties: HashSet<String>,
    next_codes: VecDeque<i64>,
    /// Raw bodies of send calls, in order.
    bodies: Vec<String>,
    /// msgid -> recalled.
    msgs: HashMap<String, bool>,
    recall_calls: usize,
}

type WcState = Arc<Mutex<Wc>>;

fn wc_token_check(w: &Wc, q: &HashMap<String, String>) -> Option<Response> {
    let t = q.get("access_token").cloned().unwrap_or_default();
    if w.expired.contains(&t) {
        return Some(
            axum::Json(json!({"errcode": 42001, "errmsg": "access_token expired"})).into_response(),
        );
    }
    if !w.valid.contains(&t) {
        return Some(
            axum::Json(json!({"errcode": 40014, "errmsg": "invalid access_token"})).into_response(),
        );
    }
    None
}

async fn wc_gettoken(
    State(s): State<WcState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let mut w = s.lock();
    w.token_fetches += 1;
    if q.get("corpsecret").map(String::as_str) != Some(WECOM_SECRET)
        || q.get("corpid").map(String::as_str) != Some("wwcorp")
    {
        return axum::Json(json!({"errcode": 40001, "errmsg": "invalid credential"}))
            .into_response();
    }
    w.seq += 1;
    let t = format!("wc-token-{}", w.seq);
    w.valid.insert(t.clone());
    axum::Json(json!({"errcode": 0, "errmsg": "ok", "access_token": t, "expires_in": 7200}))
        .into_response()
}

async fn wc_send(
    State(s): State<WcState>,
    Query(q): Query<HashMap<String, String>>,
    body: String,
) -> Response {
    let mut w = s.lock();
    if let Some(r) = wc_token_check(&w, &q) {
        return r;
    }
    if let Some(code) = w.next_codes.pop_front() {
        return axum::Json(json!({"errcode": code, "errmsg": "injected"})).into_response();
    }
    let b: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(b["agentid"], 1000002);
    w.bodies.push(body.clone());
    let users: Vec<String> = b["touser"]
        .as_str()
        .unwrap_or("")
        .split('|')
        .filter(|s| !s.is_empty())
        .map(str::to_lowercase)
        .collect();
    if users.len() > 1000 {
        return axum::Json(json!({"errcode": 40058, "errmsg": "touser exceeds 1000"}))
            .into_response();
    }
    let parties: Vec<String> = b["toparty"]
        .as_str()
        .unwrap_or("")
        .split('|')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let tags: Vec<String> = b["totag"]
        .as_str()
        .unwrap_or("")
        .split('|')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let bad_users: Vec<&String> = users
        .iter()
        .filter(|u| w.invalid_users.contains(*u))
        .collect();
    let bad_parties: Vec<&String> = parties
        .iter()
        .filter(|p| !w.known_parties.contains(*p))
        .collect();
    if bad_users.len() == users.len() && bad_parties.len() == parties.len() && tags.is_empty() {
        return axum::Json(json!({"errcode": 81013, "errmsg": "user & party & tag all invalid"}))
            .into_response();
    }
    let msgid = format!("wc-msg-{}", w.bodies.len());
    let answer = json!({
        "errcode": 0, "errmsg": "ok",
        "invaliduser": bad_users.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("|"),
        "invalidparty": bad_parties.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("|"),
        "invalidtag": "",
        "msgid": msgid,
    });
    w.msgs.insert(msgid, false);
    axum::Json(answer).into_response()
}

async fn wc_recall(
    State(s): State<WcState>,
    Query(q): Query<HashMap<String, String>>,
    axum::Json(b): axum::Json<Value>,
) -> Response {
    let mut w = s.lock();
    w.recall_calls += 1;
    if let Some(r) = wc_token_check(&w, &q) {
        return r;
    }
    let id = b["msgid"].as_str().unwrap_or("").to_string();
    match w.msgs.get_mut(&id) {
        Some(recalled) => {
            *recalled = true;
            axum::Json(json!({"errcode": 0, "errmsg": "ok"})).into_response()
        }
        None => axum::Json(json!({"errcode": 301059, "errmsg": "msgid not found"})).into_response(),
    }
}

async fn wecom_fake() -> (String, WcState) {
    let s: WcState = Arc::default();
    let app = Router::new()
        .route("/cgi-bin/gettoken", get(wc_gettoken))
        .route("/cgi-bin/message/send", post(wc_send))
        .route("/cgi-bin/message/recall", post(wc_recall))
        .with_state(s.clone());
    (serve(app).await, s)
}

fn wecom_parts(base: &str) -> WecomConfig {
    WecomConfig {
        corpid: "wwcorp".into(),
        corpsecret: SecretSource::Inline(WECOM_SECRET.into()),
        agentid: 1000002,
        api_base: Some(base.into()),
        ca_file: None,
        allow_insecure_http: false,
    }
}

fn wecom_cfg(base: &str) -> ChannelConfig {
    ChannelConfig {
        common: common("wc"),
        provider: ProviderConfig::Wecom(wecom_parts(base)),
    }
}

const TEXT: &str = r#"{"msgtype":"text","text":{"content":"standup in 10 minutes"}}"#;

fn wecom_with_clock(base: &str, clock: Arc<dyn Clock>) -> WecomChannel {
    let c = ctx(Arc::new(MemoryVault::new()), "n1");
    WecomChannel::with_options(&common("wc"), &wecom_parts(base), &c, opts(clock)).unwrap()
}

#[tokio::test]
async fn wecom_batches_2500_users_into_3_calls_and_maps_invalid_users() {
    let (base, s) = wecom_fake().await;
    s.lock()
        .invalid_users
        .extend(["baduser7".to_string(), "u1500".to_string()]);
    let ch = build(&wecom_cfg(&base), &BuildContext::local()).unwrap();
    assert_eq!(ch.max_batch(), 1000);
    assert!(ch.fans_out());
    let ds: Vec<Delivery> = (0..2500)
        .map(|i| {
            let r = if i == 7 {
                "BadUser7".to_string()
            } else {
                format!("u{i}")
            };
            delivery(&r, TEXT, &format!("camp-1-{i}"))
        })
        .collect();
    let out = ch.send_batch(&ds).await;
    assert_eq!(out.len(), 2500);
    let w = s.lock();
    assert_eq!(w.bodies.len(), 3);
    let sizes: Vec<usize> = w
        .bodies
        .iter()
        .map(|b| {
            serde_json::from_str::<Value>(b).unwrap()["touser"]
                .as_str()
                .unwrap()
                .split('|')
                .count()
        })
        .collect();
    assert_eq!(sizes, vec![1000, 1000, 500]);
    let b0: Value = serde_json::from_str(&w.bodies[0]).unwrap();
    assert_eq!(b0["enable_duplicate_check"], 1);
    assert_eq!(b0["duplicate_check_interval"], 1800);
    assert_eq!(b0["msgtype"], "text");
    assert_eq!(b0["text"]["content"], "standup in 10 minutes");
    assert!(b0["herald_key"].as_str().unwrap().starts_with("batch:"));
    drop(w);
    for (i, o) in out.iter().enumerate() {
        match i {
            7 | 1500 => {
                assert_eq!(o.class(), "permanent", "{i}: {o:?}");
                assert!(error_of(o).contains("invalid userid"));
            }
            _ => {
                let want = format!("wc-msg-{}", i / 1000 + 1);
                assert_eq!(
                    o,
                    &SendOutcome::Delivered {
                        provider_msgid: Some(want),
                        status: Some(0)
                    },
                    "{i}"
                );
            }
        }
    }
    assert_eq!(s.lock().token_fetches, 1);
}

#[tokio::test]
async fn wecom_81013_fails_every_delivery_of_the_call() {
    let (base, s) = wecom_fake().await;
    s.lock()
        .invalid_users
        .extend(["x1".to_string(), "x2".to_string()]);
    let ch = wecom_with_clock(&base, Arc::new(SystemClock));
    let ds = vec![delivery("x1", TEXT, "a"), delivery("X2", TEXT, "b")];
    let out = ch.send_batch(&ds).await;
    for o in &out {
        assert_eq!(o.class(), "permanent");
        assert!(error_of(o).contains("81013"));
    }
}

#[tokio::test]
async fn wecom_parties_tags_and_error_classes() {
    let (base, s) = wecom_fake().await;
    s.lock().known_parties.insert("2".into());
    let ch = wecom_with_clock(&base, Arc::new(SystemClock));
    let ds = vec![
        delivery("zhangsan", TEXT, "a"),
        delivery("party:2", TEXT, "b"),
        delivery("party:99", TEXT, "c"),
        delivery("tag:5", TEXT, "d"),
    ];
    let out = ch.send_batch(&ds).await;
    let classes: Vec<&str> = out.iter().map(SendOutcome::class).collect();
    assert_eq!(
        classes,
        vec!["delivered", "delivered", "permanent", "delivered"]
    );
    let b: Value = serde_json::from_str(&s.lock().bodies[0]).unwrap();
    assert_eq!(b["touser"], "zhangsan");
    assert_eq!(b["toparty"], "2|99");
    assert_eq!(b["totag"], "5");

    let d = delivery("lisi", TEXT, "k");
    for (code, class) in [
        (45009, "throttled"),
        (45033, "throttled"),
        (-1, "retry"),
        (40058, "permanent"),
    ] {
        s.lock().next_codes.push_back(code);
        assert_eq!(ch.send(&d).await.class(), class, "errcode {code}");
    }
    // Token expiry: refresh once, retry once.
    {
        let mut w = s.lock();
        let all: Vec<String> = w.valid.drain().collect();
        w.expired.extend(all);
    }
    assert_eq!(ch.send(&d).await.class(), "delivered");
    assert_eq!(s.lock().token_fetches, 2);
    // Message validation.
    let out = ch
        .send(&delivery("lisi", r#"{"text":{"content":"x"}}"#, "k"))
        .await;
    assert!(error_of(&out).contains("msgtype"), "{out:?}");
    let out = ch
        .send(&delivery(
            "lisi",
            r#"{"msgtype":"markdown","text":{"content":"x"}}"#,
            "k",
        ))
        .await;
    assert_eq!(out.class(), "permanent");
    for mt in [
        r#"{"msgtype":"textcard","textcard":{"title":"t","description":"d","url":"https://x"}}"#,
        r#"{"msgtype":"markdown","markdown":{"content":"**hi**"}}"#,
        r#"{"msgtype":"template_card","template_card":{"card_type":"text_notice"}}"#,
    ] {
        assert_eq!(
            ch.send(&delivery("lisi", mt, "k")).await.class(),
            "delivered",
            "{mt}"
        );
    }
}

#[tokio::test]
async fn wecom_requests_are_byte_identical_per_key_and_differ_across_keys() {
    let (base, s) = wecom_fake().await;
    let ch = wecom_with_clock(&base, Arc::new(SystemClock));
    ch.send(&delivery("u1", TEXT, "key-1")).await;
    ch.send(&delivery("u1", TEXT, "key-1")).await;
    ch.send(&delivery("u1", TEXT, "key-2")).await;
    let w = s.lock();
    assert_eq!(w.bodies[0], w.bodies[1]);
    assert_ne!(w.bodies[0], w.bodies[2]);
    let b: Value = serde_json::from_str(&w.bodies[0]).unwrap();
    assert_eq!(b["herald_key"], "key-1");
}

#[tokio::test]
async fn wecom_recall_inside_and_outside_the_window() {
    let (base, s) = wecom_fake().await;
    let clock = ManualClock::new(1_700_000_000_000);
    let ch = wecom_with_clock(&base, Arc::new(clock.clone()));
    let out = ch.send(&delivery("u1", TEXT, "k")).await;
    let SendOutcome::Delivered {
        provider_msgid: Some(id),
        ..
    } = out
    else {
        panic!("{out:?}")
    };
    let sent_at = clock.now_ms();
    clock.advance(25 * 3_600_000);
    assert_eq!(
        ch.recall(&id, sent_at).await,
        Err(RecallError::TooOld { window_hours: 24 })
    );
    assert_eq!(s.lock().recall_calls, 0, "no call outside the window");
    clock.set(sent_at + 3_600_000);
    ch.recall(&id, sent_at).await.unwrap();
    assert_eq!(s.lock().msgs.get(&id), Some(&true));
    let err = ch.recall("no-such-msg", sent_at).await.unwrap_err();
    assert!(
        matches!(err, RecallError::Provider(ref m) if m.contains("301059")),
        "{err:?}"
    );
}

#[tokio::test]
async fn only_wechat_reads_delivery_callbacks() {
    let local = BuildContext::local();
    let wx = build(&wechat_cfg("http://127.0.0.1:1", TokenMode::Stable), &local).unwrap();
    let xml = b"<xml><Event><![CDATA[TEMPLATESENDJOBFINISH]]></Event><MsgID>200163836</MsgID>\
        <Status><![CDATA[failed:user block]]></Status></xml>";
    let unsigned = |body: &'static [u8]| herald_channels::CallbackRequest {
        query: &[],
        body,
        now_s: 0,
    };
    assert!(!wx.callback_signed());
    assert_eq!(
        wx.parse_callback(&unsigned(xml)),
        Ok(vec![CallbackEvent {
            provider_msgid: "200163836".into(),
            status: FinalStatus::UserBlock,
        }])
    );
    assert!(matches!(
        wx.parse_callback(&unsigned(b"<xml><Event>subscribe</Event></xml>")),
        Err(CallbackError::Invalid(m)) if m.contains("Event")
    ));
    let wc = build(&wecom_cfg("http://127.0.0.1:1"), &local).unwrap();
    assert_eq!(
        wc.parse_callback(&unsigned(xml)),
        Err(CallbackError::Unsupported)
    );
    let log = build(&ChannelConfig::log("log"), &local).unwrap();
    assert_eq!(
        log.parse_callback(&unsigned(xml)),
        Err(CallbackError::Unsupported)
    );
}

#[tokio::test]
async fn provider_configs_name_missing_fields() {
    let parse = |v: Value| serde_json::from_value::<ChannelConfig>(v).map_err(|e| e.to_string());
    let wecom = json!({"name": "wc", "kind": "wecom", "api_base": "http://127.0.0.1:1",
                       "corpid": "wwcorp", "corpsecret": WECOM_SECRET, "agentid": 1000002});
    assert!(parse(wecom.clone()).is_ok());
    for key in ["agentid", "corpid", "corpsecret"] {
        let mut t = wecom.clone();
        t.as_object_mut().unwrap().remove(key);
        let e = parse(t).unwrap_err();
        assert!(
            e.contains(&format!("(kind wecom): missing key \"{key}\"")),
            "{e}"
        );
    }
    let e = parse(json!({"name": "wx", "kind": "wechat", "secret": "s"})).unwrap_err();
    assert!(e.contains("missing key \"appid\""), "{e}");
    let e = parse(json!({"name": "f", "kind": "fcm"})).unwrap_err();
    assert!(e.contains("missing key \"service_account\""), "{e}");

    let local = BuildContext::local();
    let e = build(&wechat_cfg("not a url", TokenMode::Stable), &local)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("api_base"), "{e}");
    let mut c = wecom_cfg("http://127.0.0.1:1");
    assert!(!format!("{c:?}").contains(WECOM_SECRET));
    if let ProviderConfig::Wecom(p) = &mut c.provider {
        p.corpsecret = SecretSource::Env("HERALD_TEST_SURELY_UNSET_CORPSECRET".into());
    }
    let e = build(&c, &local).err().unwrap().to_string();
    assert!(e.contains("corpsecret_env"), "{e}");
}

// ------------------------------------------------------------------- FCM fake

const SA_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/fcm-service-account.json"
);
const PUBLIC_KEY: &[u8] = include_bytes!("../fixtures/fcm-test-public.der");
const CLIENT_EMAIL: &str = "herald-test@herald-test.iam.gserviceaccount.com";

#[derive(Default)]
struct Fc {
    base: String,
    seq: u64,
    token_fetches: usize,
    /// Claims of every assertion that verified.
    claims: Vec<Value>,
    rejected_assertions: usize,
    valid: HashSet<String>,
    sends: Vec<Value>,
}

type FcState = Arc<Mutex<Fc>>;

fn verify_jwt(jwt: &str, aud: &str) -> Result<Value, String> {
    let parts: Vec<&str> = jwt.split('.').collect();
    if parts.len() != 3 {
        return Err("not three parts".into());
    }
    let header: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(parts[0])
            .map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    if header["alg"] != "RS256" || header["typ"] != "JWT" || header["kid"] != "test-key-1" {
        return Err(format!("bad header {header}"));
    }
    let claims: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(parts[1])
            .map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let sig = URL_SAFE_NO_PAD
        .decode(parts[2])
        .map_err(|e| e.to_string())?;
    let key = ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        PUBLIC_KEY,
    );
    let signed = format!("{}.{}", parts[0], parts[1]);
    key.verify(signed.as_bytes(), &sig)
        .map_err(|_| "bad signature".to_string())?;
    let iat = claims["iat"].as_i64().ok_or("no iat")?;
    let now = SystemClock.now_ms() / 1000;
    if claims["iss"] != CLIENT_EMAIL
        || claims["scope"] != "https://www.googleapis.com/auth/firebase.messaging"
        || claims["aud"] != aud
        || claims["exp"].as_i64() != Some(iat + 3600)
        || (iat - now).abs() > 60
    {
        return Err(format!("bad claims {claims}"));
    }
    Ok(claims)
}

async fn fc_token(State(s): State<FcState>, Form(f): Form<HashMap<String, String>>) -> Response {
    let mut w = s.lock();
    w.token_fetches += 1;
    let aud = format!("{}/token", w.base);
    if f.get("grant_type").map(String::as_str)
        != Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "unsupported_grant_type"})),
        )
            .into_response();
    }
    match verify_jwt(f.get("assertion").map(String::as_str).unwrap_or(""), &aud) {
        Ok(claims) => {
            w.claims.push(claims);
            w.seq += 1;
            let t = format!("ya29.fake-{}", w.seq);
            w.valid.insert(t.clone());
            axum::Json(json!({"access_token": t, "expires_in": 3599, "token_type": "Bearer"}))
                .into_response()
        }
        Err(e) => {
            w.rejected_assertions += 1;
            (
                StatusCode::BAD_REQUEST,
                axum::Json(json!({"error": "invalid_grant", "error_description": e})),
            )
                .into_response()
        }
    }
}

fn fcm_error(status: u16, name: &str, code: Option<&str>) -> Response {
    let mut details = Vec::new();
    if let Some(c) = code {
        details.push(
            json!({"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": c}),
        );
    }
    (
        StatusCode::from_u16(status).unwrap(),
        axum::Json(json!({"error": {"code": status, "message": format!("injected {name}"), "status": name, "details": details}})),
    )
        .into_response()
}

async fn fc_send(
    State(s): State<FcState>,
    axum::extract::Path(project): axum::extract::Path<String>,
    headers: HeaderMap,
    axum::Json(b): axum::Json<Value>,
) -> Response {
    let mut w = s.lock();
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let token = auth.strip_prefix("Bearer ").unwrap_or("");
    if !w.valid.contains(token) {
        return fcm_error(401, "UNAUTHENTICATED", None);
    }
    assert_eq!(project, "herald-test");
    let device = b["message"]["token"].as_str().unwrap_or("").to_string();
    match device.as_str() {
        "unregistered" => fcm_error(404, "NOT_FOUND", Some("UNREGISTERED")),
        "quota" => {
            let mut r = fcm_error(429, "RESOURCE_EXHAUSTED", Some("QUOTA_EXCEEDED"));
            r.headers_mut().insert("retry-after", "7".parse().unwrap());
            r
        }
        "bare-429" => {
            let mut r = (StatusCode::TOO_MANY_REQUESTS, "slow down").into_response();
            r.headers_mut().insert("retry-after", "3".parse().unwrap());
            r
        }
        "unavailable" => {
            let mut r = fcm_error(503, "UNAVAILABLE", Some("UNAVAILABLE"));
            r.headers_mut().insert("retry-after", "2".parse().unwrap());
            r
        }
        "internal" => fcm_error(500, "INTERNAL", Some("INTERNAL")),
        "badarg" => fcm_error(400, "INVALID_ARGUMENT", Some("INVALID_ARGUMENT")),
        "mismatch" => fcm_error(403, "PERMISSION_DENIED", Some("SENDER_ID_MISMATCH")),
        "apns" => fcm_error(401, "UNAUTHENTICATED", Some("THIRD_PARTY_AUTH_ERROR")),
        _ => {
            w.sends.push(b);
            let name = format!("projects/{project}/messages/{}", w.sends.len());
            axum::Json(json!({ "name": name })).into_response()
        }
    }
}

async fn fcm_fake() -> (String, FcState) {
    let s: FcState = Arc::default();
    let app = Router::new()
        .route("/token", post(fc_token))
        .route("/v1/projects/{project}/messages:send", post(fc_send))
        .with_state(s.clone());
    let base = serve(app).await;
    s.lock().base = base.clone();
    (base, s)
}

fn fcm_parts(base: &str) -> FcmConfig {
    FcmConfig {
        service_account: SA_PATH.into(),
        project_id: None,
        token_url: Some(format!("{base}/token")),
        api_base: Some(base.into()),
        ca_file: None,
        allow_insecure_http: false,
    }
}

fn fcm_cfg(base: &str) -> ChannelConfig {
    ChannelConfig {
        common: common("push"),
        provider: ProviderConfig::Fcm(fcm_parts(base)),
    }
}

const PUSH: &str =
    r#"{"notification":{"title":"Reminder","body":"in 10 minutes"},"data":{"subject":"42"}}"#;

#[tokio::test]
async fn fcm_signs_a_verifiable_jwt_and_delivers_with_the_message_name() {
    let (base, s) = fcm_fake().await;
    let ch = build(&fcm_cfg(&base), &BuildContext::local()).unwrap();
    let out = ch.send(&delivery("device-abc", PUSH, "k")).await;
    assert_eq!(
        out,
        SendOutcome::Delivered {
            provider_msgid: Some("projects/herald-test/messages/1".into()),
            status: Some(200)
        }
    );
    assert_eq!(
        ch.send(&delivery("device-abc", PUSH, "k2")).await.class(),
        "delivered"
    );
    {
        let w = s.lock();
        assert_eq!(w.token_fetches, 1);
        assert_eq!(w.rejected_assertions, 0);
        assert_eq!(w.claims[0]["aud"], format!("{base}/token"));
        let m = &w.sends[0]["message"];
        assert_eq!(m["token"], "device-abc");
        assert_eq!(m["notification"]["title"], "Reminder");
        assert_eq!(m["data"]["subject"], "42");
    }
    assert!(ch.provider_status().await.token_valid_until.is_some());
}

#[tokio::test]
async fn fcm_classifies_every_error_class() {
    let (base, _s) = fcm_fake().await;
    let c = ctx(Arc::new(MemoryVault::new()), "n1");
    let ch = FcmChannel::with_options(
        &common("push"),
        &fcm_parts(&base),
        &c,
        opts(Arc::new(SystemClock)),
    )
    .unwrap();
    let send = |r: &'static str| {
        let ch = &ch;
        async move { ch.send(&delivery(r, PUSH, "k")).await }
    };
    let out = send("unregistered").await;
    assert_eq!(out.class(), "permanent");
    assert!(
        error_of(&out).contains("device token is invalid"),
        "{out:?}"
    );
    assert_eq!(
        send("quota").await,
        SendOutcome::Throttled {
            error: "HTTP 429 QUOTA_EXCEEDED: injected RESOURCE_EXHAUSTED".into(),
            status: Some(429),
            retry_after_ms: Some(7_000)
        }
    );
    let out = send("bare-429").await;
    assert!(
        matches!(
            out,
            SendOutcome::Throttled {
                retry_after_ms: Some(3_000),
                ..
            }
        ),
        "{out:?}"
    );
    let out = send("unavailable").await;
    assert!(
        matches!(
            out,
            SendOutcome::Retryable {
                retry_after_ms: Some(2_000),
                ..
            }
        ),
        "{out:?}"
    );
    assert_eq!(send("internal").await.class(), "retry");
    assert_eq!(send("badarg").await.class(), "permanent");
    assert_eq!(send("mismatch").await.class(), "permanent");
    assert_eq!(send("apns").await.class(), "permanent");
    let out = ch.send(&delivery("d", r#"{"data":{"n":1}}"#, "k")).await;
    assert_eq!(out.class(), "permanent");
    assert!(error_of(&out).contains("string"));
}

#[tokio::test]
async fn fcm_refreshes_after_401_once() {
    let (base, s) = fcm_fake().await;
    let ch = FcmChannel::new(&common("push"), &fcm_parts(&base), &BuildContext::local()).unwrap();
    assert_eq!(
        ch.send(&delivery("d1", PUSH, "k")).await.class(),
        "delivered"
    );
    s.lock().valid.clear();
    assert_eq!(
        ch.send(&delivery("d1", PUSH, "k")).await.class(),
        "delivered"
    );
    assert_eq!(s.lock().token_fetches, 2);
    assert!(!format!("{ch:?}").contains("PRIVATE KEY"));
}

#[tokio::test]
async fn fcm_token_endpoint_rejection_is_retryable() {
    let (base, s) = fcm_fake().await;
    let mut cfg = fcm_parts(&base);
    // The JWT's aud is the token URL; the fake wants its own /token.
    cfg.token_url = Some(format!("{base}/token?wrong-aud"));
    let ch = FcmChannel::new(&common("push"), &cfg, &BuildContext::local()).unwrap();
    let out = ch.send(&delivery("d1", PUSH, "k")).await;
    assert_eq!(out.class(), "retry");
    assert!(error_of(&out).contains("invalid_grant"), "{out:?}");
    assert!(!error_of(&out).contains("assertion="));
    assert_eq!(s.lock().rejected_assertions, 1);
}

// ------------------------------------------------------------- secrets in logs

/// Records every field of every `herald*` event and span as text.
struct Capture(Arc<Mutex<String>>);

struct Fields(Arc<Mutex<String>>);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let mut s = self.0.lock();
        s.push_str(&format!("{}={value:?} ", field.name()));
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, m: &tracing::Metadata<'_>) -> bool {
        m.target().starts_with("herald")
    }
    fn new_span(&self, a: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        a.record(&mut Fields(self.0.clone()));
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, r: &tracing::span::Record<'_>) {
        r.record(&mut Fields(self.0.clone()));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, e: &tracing::Event<'_>) {
        e.record(&mut Fields(self.0.clone()));
        self.0.lock().push('\n');
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test]
async fn logs_never_hold_secrets_or_tokens() {
    let text = Arc::new(Mutex::new(String::new()));
    let _guard = tracing::subscriber::set_default(Capture(text.clone()));
    // Tests on other threads may have cached "no one listens" for these
    // callsites before this subscriber existed; ask every callsite again.
    tracing::callsite::rebuild_interest_cache();
    let (base, s) = wechat_fake().await;
    for mode in [TokenMode::Classic, TokenMode::Stable] {
        let ch = wechat(&base, mode).await;
        let d = delivery("oUser1", TEMPLATE, "k1");
        assert_eq!(ch.send(&d).await.class(), "delivered");
        s.lock().expire_all();
        assert_eq!(ch.send(&d).await.class(), "delivered");
        s.lock().token_errcode = Some(40164);
        s.lock().expire_all();
        assert_eq!(ch.send(&d).await.class(), "retry");
        s.lock().token_errcode = None;
    }
    let (base, _s) = wecom_fake().await;
    let ch = wecom_with_clock(&base, Arc::new(SystemClock));
    assert_eq!(
        ch.send(&delivery("u1", TEXT, "k")).await.class(),
        "delivered"
    );
    let (base, _f) = fcm_fake().await;
    let ch = FcmChannel::new(&common("push"), &fcm_parts(&base), &BuildContext::local()).unwrap();
    assert_eq!(
        ch.send(&delivery("d", PUSH, "k")).await.class(),
        "delivered"
    );
    let logged = text.lock().clone();
    // The capture works (the token cache's own events can be filtered out
    // when other tests in this binary register those callsites first, so the
    // check is on the channels' events, which only this test's threads emit).
    assert!(logged.contains("wechat send"), "{logged}");
    assert!(logged.contains("wecom send"), "{logged}");
    for secret in [
        WX_SECRET,
        WECOM_SECRET,
        "wx-token-",
        "wc-token-",
        "ya29.",
        "PRIVATE KEY",
    ] {
        assert!(!logged.contains(secret), "{secret} logged: {logged}");
    }
}
