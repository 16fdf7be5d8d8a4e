//! WeChat Official Account mock: access tokens (`/cgi-bin/token`, `/cgi-bin/stable_token`)
//! and template messages (`/cgi-bin/message/template/send`), plus the
//! `TEMPLATESENDJOBFINISH` delivery callback.
//!
//! Why it is this picky: the channel client must cope with what the real platform does,
//! not with what is convenient. So the mock rotates tokens with the documented 5-minute
//! overlap, keeps the stable token until it has 5 minutes left, enforces the daily
//! quotas, de-duplicates `client_msg_id` per openid for 10 minutes, and answers every
//! error as HTTP 200 with `errcode`/`errmsg` (`errmsg` ending in ` rid: ...`).
//!
//! Hot path: a send takes the token read lock, one de-dup shard lock (only when
//! `client_msg_id` is set), the quota mutex and one ring slot, each briefly and never
//! across an await. Memory is bounded: the message ring is fixed-size, the de-dup map
//! forgets entries after 10 minutes, old tokens are pruned a day after they died, and
//! callbacks go through a bounded queue (overflow is counted, not buffered).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, extract::rejection::QueryRejection};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::sync::{Semaphore, mpsc};
use xxhash_rust::xxh3::Xxh3;

use crate::MockState;
use crate::providers::{
    self, Clock, ClockMove, DailyCounter, ErrorTally, MINUTE_MS, Rids, Ring, TimedDedup,
};
use crate::wechat_sign;

/// How many accepted template messages `GET /_mock/wechat/messages` can show.
pub const WECHAT_RING_CAPACITY: usize = 10_000;

/// A superseded token keeps working this long.
const OVERLAP_MS: u64 = 5 * MINUTE_MS;
/// `client_msg_id` de-dup window.
const CLIENT_MSG_WINDOW_MS: u64 = 10 * MINUTE_MS;
/// Minimum spacing of `force_refresh` stable-token calls.
const FORCE_GAP_MS: u64 = 30_000;
/// Dead tokens are remembered this long (so they answer 42001, not 40001), then pruned.
const DEAD_TOKEN_KEEP_MS: u64 = providers::DAY_MS;
/// Callbacks waiting to be posted; beyond this they are dropped and counted.
const CALLBACK_QUEUE: usize = 65_536;
/// Callbacks posted at the same time.
const CALLBACK_CONCURRENCY: usize = 32;

/// How the WeChat mock starts out. Quotas and the callback URL can be changed at runtime
/// through `POST /_mock/wechat/config`, faults through `POST /_mock/wechat/faults`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WechatConfig {
    pub appid: String,
    pub secret: String,
    /// The account's original id (`gh_...`), sent as `ToUserName` in callbacks.
    pub original_id: String,
    /// Lifetime of issued access tokens.
    pub token_ttl_secs: u64,
    /// `/cgi-bin/token` calls allowed per (Beijing) day.
    pub token_daily_quota: u64,
    /// `stable_token` calls with `force_refresh:true` allowed per day.
    pub stable_force_daily_quota: u64,
    /// Template messages accepted per day.
    pub send_daily_quota: u64,
    /// Known template ids; `None` accepts any non-empty id.
    pub template_ids: Option<Vec<String>>,
    /// Where `TEMPLATESENDJOBFINISH` events are POSTed, if anywhere.
    pub callback_url: Option<String>,
    /// The server configuration's `Token`: callbacks are signed with it
    /// (`signature`, `timestamp`, `nonce` in the query). Unsigned without one.
    pub callback_token: Option<String>,
    /// The `EncodingAESKey` of safe mode (43 characters): callbacks are
    /// encrypted and carry `encrypt_type=aes` and `msg_signature`. Needs
    /// `callback_token`.
    pub encoding_aes_key: Option<String>,
    pub faults: WechatFaults,
}

impl Default for WechatConfig {
    fn default() -> Self {
        WechatConfig {
            appid: "wxmockappid".to_owned(),
            secret: "mock-wechat-secret".to_owned(),
            original_id: "gh_mockaccount".to_owned(),
            token_ttl_secs: 7200,
            token_daily_quota: 2000,
            stable_force_daily_quota: 20,
            send_daily_quota: 100_000,
            template_ids: None,
            callback_url: None,
            callback_token: None,
            encoding_aes_key: None,
            faults: WechatFaults::default(),
        }
    }
}

/// Misbehaviour to inject; `POST /_mock/wechat/faults` replaces all of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WechatFaults {
    /// The next N template sends answer `-1` (system busy).
    pub system_busy_next: u32,
    /// The next N template sends answer 45009.
    pub quota_next: u32,
    /// One-shot: every token issued so far answers 42001 from now on. Reads back false.
    pub expire_tokens: bool,
    /// Openids answered 40003.
    pub invalid_openids: Vec<String>,
    /// Openids answered 43004 (not following the account).
    pub unsubscribed: Vec<String>,
    /// Openids answered 43019 (blacklisted).
    pub blocked: Vec<String>,
    /// Accepted, but the callback says `failed:user block`.
    pub callback_block: Vec<String>,
    /// Accepted, but the callback says `failed: system failed`.
    pub callback_fail: Vec<String>,
    /// Delay added before every WeChat answer.
    pub latency_ms: u64,
}

/// `GET /_mock/wechat/stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WechatStats {
    /// Template send calls, whatever their outcome.
    pub received: u64,
    /// Template messages accepted and delivered (duplicates not included).
    pub delivered: u64,
    /// Sends answered with an earlier msgid because of `client_msg_id`.
    pub duplicates: u64,
    /// Non-zero `errcode` answers of every WeChat route, by code.
    pub errors: BTreeMap<String, u64>,
    /// Tokens issued by `/cgi-bin/token`.
    pub token_fetches: u64,
    /// Successful `/cgi-bin/stable_token` answers (same or new token).
    pub stable_token_fetches: u64,
    /// Callbacks the receiver answered 2xx.
    pub callbacks_sent: u64,
    /// Callbacks that failed (connection error or non-2xx).
    pub callbacks_failed: u64,
    /// Callbacks dropped because the queue was full.
    pub callbacks_dropped: u64,
    /// Template sends counted against today's quota.
    pub send_quota_used: u64,
    /// `/cgi-bin/token` calls counted against today's quota.
    pub token_quota_used: u64,
}

/// One accepted template message; `GET /_mock/wechat/messages`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WechatMessage {
    pub touser: String,
    pub template_id: String,
    pub client_msg_id: Option<String>,
    pub msgid: u64,
    pub url: Option<String>,
    pub miniprogram: Option<serde_json::Value>,
    pub data: serde_json::Value,
    /// Mock clock (unix ms) when it was accepted.
    pub at_ms: u64,
}

/// The runtime-changeable part of the configuration; `GET|POST /_mock/wechat/config`.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Settings {
    appid: String,
    original_id: String,
    token_ttl_secs: u64,
    token_daily_quota: u64,
    stable_force_daily_quota: u64,
    send_daily_quota: u64,
    template_ids: Option<Vec<String>>,
    callback_url: Option<String>,
    /// How far the mock clock is moved from the system clock.
    clock_offset_ms: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsUpdate {
    #[serde(default, deserialize_with = "providers::double_option")]
    callback_url: Option<Option<String>>,
    #[serde(default, deserialize_with = "providers::double_option")]
    template_ids: Option<Option<Vec<String>>>,
    token_daily_quota: Option<u64>,
    stable_force_daily_quota: Option<u64>,
    send_daily_quota: Option<u64>,
}

struct Live {
    token_ttl_ms: u64,
    token_daily_quota: u64,
    stable_force_daily_quota: u64,
    send_daily_quota: u64,
    template_ids: Option<HashSet<Box<str>>>,
    callback_url: Option<Arc<str>>,
}

/// Fault lists as given (for reading back) plus lookup sets.
struct FaultLists {
    given: WechatFaults,
    invalid: HashSet<Box<str>>,
    unsubscribed: HashSet<Box<str>>,
    blocked: HashSet<Box<str>>,
    callback_block: HashSet<Box<str>>,
    callback_fail: HashSet<Box<str>>,
}

impl FaultLists {
    fn new(mut f: WechatFaults) -> FaultLists {
        let set = |v: &[String]| v.iter().map(|s| Box::from(s.as_str())).collect();
        f.expire_tokens = false;
        f.system_busy_next = 0;
        f.quota_next = 0;
        FaultLists {
            invalid: set(&f.invalid_openids),
            unsubscribed: set(&f.unsubscribed),
            blocked: set(&f.blocked),
            callback_block: set(&f.callback_block),
            callback_fail: set(&f.callback_fail),
            given: f,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum TokenKind {
    Plain,
    Stable,
}

#[derive(Clone, Copy)]
struct TokenRec {
    kind: TokenKind,
    expires_ms: u64,
    /// When a newer token superseded it (plus the overlap); `u64::MAX` while current.
    invalid_at_ms: u64,
}

impl TokenRec {
    fn dead_at(&self) -> u64 {
        self.expires_ms.min(self.invalid_at_ms)
    }
}

#[derive(Default)]
struct Tokens {
    map: HashMap<Box<str>, TokenRec>,
    latest_plain: Option<Box<str>>,
    latest_stable: Option<Box<str>>,
    plain_quota: DailyCounter,
    force_quota: DailyCounter,
    last_force_ms: Option<u64>,
    seq: u64,
}

impl Tokens {
    fn mint(&mut self, kind: TokenKind, now_ms: u64, ttl_ms: u64) -> Box<str> {
        self.seq += 1;
        let a = providers::mix64(now_ms ^ self.seq.rotate_left(32));
        let b = providers::mix64(a ^ self.seq);
        let prefix = match kind {
            TokenKind::Plain => "MOCKWX",
            TokenKind::Stable => "MOCKWXS",
        };
        let token: Box<str> = format!("{}_{prefix}{a:016x}{b:016x}", self.seq).into();
        self.map.insert(
            token.clone(),
            TokenRec {
                kind,
                expires_ms: now_ms.saturating_add(ttl_ms),
                invalid_at_ms: u64::MAX,
            },
        );
        self.prune(now_ms);
        token
    }

    /// Starts the overlap clock of `token`, if it is still the live one.
    fn supersede(&mut self, token: Option<&str>, now_ms: u64) {
        if let Some(rec) = token.and_then(|t| self.map.get_mut(t)) {
            rec.invalid_at_ms = rec.invalid_at_ms.min(now_ms.saturating_add(OVERLAP_MS));
        }
    }

    fn prune(&mut self, now_ms: u64) {
        if self.map.len() < 256 {
            return;
        }
        self.map
            .retain(|_, rec| rec.dead_at().saturating_add(DEAD_TOKEN_KEEP_MS) > now_ms);
    }

    fn check(&self, token: &str, now_ms: u64) -> Result<(), WxError> {
        let Some(rec) = self.map.get(token) else {
            return Err(WxError::INVALID_TOKEN);
        };
        if now_ms >= rec.expires_ms && rec.expires_ms <= rec.invalid_at_ms {
            return Err(WxError::EXPIRED_TOKEN);
        }
        if now_ms >= rec.invalid_at_ms {
            return Err(WxError::INVALID_TOKEN);
        }
        Ok(())
    }
}

/// An `errcode` answer.
#[derive(Debug, Clone)]
pub(crate) struct WxError {
    code: i64,
    msg: Cow<'static, str>,
}

impl WxError {
    pub(crate) const fn new(code: i64, msg: &'static str) -> WxError {
        WxError {
            code,
            msg: Cow::Borrowed(msg),
        }
    }
    pub(crate) const SYSTEM_BUSY: WxError = WxError::new(-1, "system error");
    const INVALID_TOKEN: WxError = WxError::new(
        40001,
        "invalid credential, access_token is invalid or not latest",
    );
    const EXPIRED_TOKEN: WxError = WxError::new(42001, "access_token expired");
    const MISSING_TOKEN: WxError = WxError::new(41001, "access_token missing");
    const QUOTA: WxError = WxError::new(45009, "reach max api daily quota limit");
    const FREQ: WxError = WxError::new(45009, "api freq out of limit");
    pub(crate) const INVALID_TEMPLATE: WxError = WxError::new(40037, "invalid template_id");
    pub(crate) const INVALID_OPENID: WxError = WxError::new(40003, "invalid openid");
    const UNSUBSCRIBED: WxError = WxError::new(43004, "require subscribe");
    const BLOCKED: WxError = WxError::new(43019, "require remove blacklist");
    const INVALID_APPID: WxError = WxError::new(40013, "invalid appid");
    const INVALID_SECRET: WxError = WxError::new(40125, "invalid appsecret");
    const INVALID_GRANT: WxError = WxError::new(40002, "invalid grant_type");
    const MISSING_APPID: WxError = WxError::new(41002, "appid missing");
    const MISSING_SECRET: WxError = WxError::new(41004, "appsecret missing");

    pub(crate) fn code(&self) -> i64 {
        self.code
    }

    pub(crate) fn owned(code: i64, msg: String) -> WxError {
        WxError {
            code,
            msg: Cow::Owned(msg),
        }
    }

    pub(crate) fn data_format(detail: impl std::fmt::Display) -> WxError {
        WxError {
            code: 47001,
            msg: Cow::Owned(format!("data format error hint: [{detail}]")),
        }
    }
}

#[derive(Default)]
struct Counters {
    received: AtomicU64,
    delivered: AtomicU64,
    duplicates: AtomicU64,
    token_fetches: AtomicU64,
    stable_token_fetches: AtomicU64,
}

#[derive(Default)]
struct CallbackCounters {
    sent: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
}

/// A callback waiting to be posted.
struct CallbackJob {
    url: Arc<str>,
    /// Signature parameters (empty when unsigned).
    query: Vec<(&'static str, String)>,
    body: String,
}

/// An accepted message as kept in the ring; parsed into [`WechatMessage`] only when read.
#[derive(Clone)]
struct Record {
    msgid: u64,
    at_ms: u64,
    touser: Box<str>,
    body: Bytes,
}

impl Record {
    fn into_message(self) -> WechatMessage {
        let v: serde_json::Value = serde_json::from_slice(&self.body).unwrap_or_default();
        let text = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_owned);
        let client_msg_id = match v.get("client_msg_id") {
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(serde_json::Value::Null) | None => None,
            Some(other) => Some(other.to_string()),
        };
        WechatMessage {
            touser: self.touser.into(),
            template_id: text("template_id").unwrap_or_default(),
            client_msg_id,
            msgid: self.msgid,
            url: text("url"),
            miniprogram: v.get("miniprogram").filter(|m| !m.is_null()).cloned(),
            data: v.get("data").cloned().unwrap_or_default(),
            at_ms: self.at_ms,
        }
    }
}

/// Everything the WeChat mock keeps.
pub(crate) struct WechatState {
    pub(crate) clock: Clock,
    appid: String,
    secret: String,
    original_id: String,
    /// Signs callbacks, when a `callback_token` is configured.
    signer: Option<wechat_sign::Signer>,
    live: RwLock<Live>,
    faults: RwLock<Arc<FaultLists>>,
    system_busy_next: AtomicU32,
    quota_next: AtomicU32,
    tokens: RwLock<Tokens>,
    send_quota: Mutex<DailyCounter>,
    dedup: TimedDedup<u64>,
    next_msgid: AtomicU64,
    counters: Counters,
    callback_counters: Arc<CallbackCounters>,
    callbacks: Mutex<Option<mpsc::Sender<CallbackJob>>>,
    errors: ErrorTally,
    rids: Rids,
    ring: Ring<Record>,
}

impl WechatState {
    pub(crate) fn new(cfg: WechatConfig) -> WechatState {
        WechatState::with_clock(cfg, Clock::system())
    }

    pub(crate) fn with_clock(cfg: WechatConfig, clock: Clock) -> WechatState {
        let state = WechatState {
            clock,
            live: RwLock::new(Live {
                token_ttl_ms: cfg.token_ttl_secs.saturating_mul(1000),
                token_daily_quota: cfg.token_daily_quota,
                stable_force_daily_quota: cfg.stable_force_daily_quota,
                send_daily_quota: cfg.send_daily_quota,
                template_ids: template_set(cfg.template_ids),
                callback_url: cfg.callback_url.map(Arc::from),
            }),
            faults: RwLock::new(Arc::new(FaultLists::new(WechatFaults::default()))),
            system_busy_next: AtomicU32::new(0),
            quota_next: AtomicU32::new(0),
            tokens: RwLock::new(Tokens::default()),
            send_quota: Mutex::new(DailyCounter::default()),
            dedup: TimedDedup::new(CLIENT_MSG_WINDOW_MS),
            // Real msgids are large numbers; start somewhere that looks like one.
            next_msgid: AtomicU64::new(2_000_000_000),
            counters: Counters::default(),
            callback_counters: Arc::new(CallbackCounters::default()),
            callbacks: Mutex::new(None),
            errors: ErrorTally::default(),
            rids: Rids::new(0x5743),
            ring: Ring::new(WECHAT_RING_CAPACITY),
            signer: cfg.callback_token.map(|token| wechat_sign::Signer {
                token,
                appid: cfg.appid.clone(),
                original_id: cfg.original_id.clone(),
                key: cfg.encoding_aes_key.as_deref().and_then(|k| {
                    wechat_sign::aes_key(k)
                        .inspect_err(
                            |e| tracing::warn!(error = %e, "wechat mock: callbacks go unencrypted"),
                        )
                        .ok()
                }),
            }),
            appid: cfg.appid,
            secret: cfg.secret,
            original_id: cfg.original_id,
        };
        state.set_faults(cfg.faults);
        state
    }

    pub(crate) fn faults(&self) -> WechatFaults {
        let mut f = self.faults.read().given.clone();
        f.system_busy_next = self.system_busy_next.load(Ordering::Relaxed);
        f.quota_next = self.quota_next.load(Ordering::Relaxed);
        f
    }

    /// Replaces the faults; `expire_tokens` is applied at once and not kept.
    pub(crate) fn set_faults(&self, f: WechatFaults) {
        if f.expire_tokens {
            let now = self.clock.now_ms();
            let mut tokens = self.tokens.write();
            for rec in tokens.map.values_mut() {
                rec.expires_ms = rec.expires_ms.min(now);
            }
            tracing::info!(
                tokens = tokens.map.len(),
                "wechat mock: expired every issued token"
            );
        }
        self.system_busy_next
            .store(f.system_busy_next, Ordering::Relaxed);
        self.quota_next.store(f.quota_next, Ordering::Relaxed);
        *self.faults.write() = Arc::new(FaultLists::new(f));
    }

    fn settings(&self) -> Settings {
        let live = self.live.read();
        let mut template_ids: Option<Vec<String>> = live
            .template_ids
            .as_ref()
            .map(|s| s.iter().map(|t| t.to_string()).collect());
        if let Some(t) = template_ids.as_mut() {
            t.sort();
        }
        Settings {
            appid: self.appid.clone(),
            original_id: self.original_id.clone(),
            token_ttl_secs: live.token_ttl_ms / 1000,
            token_daily_quota: live.token_daily_quota,
            stable_force_daily_quota: live.stable_force_daily_quota,
            send_daily_quota: live.send_daily_quota,
            template_ids,
            callback_url: live.callback_url.as_deref().map(str::to_owned),
            clock_offset_ms: self.clock.offset_ms(),
        }
    }

    fn update_settings(&self, u: SettingsUpdate) {
        let mut live = self.live.write();
        if let Some(url) = u.callback_url {
            live.callback_url = url.filter(|s| !s.is_empty()).map(Arc::from);
        }
        if let Some(ids) = u.template_ids {
            live.template_ids = template_set(ids);
        }
        if let Some(q) = u.token_daily_quota {
            live.token_daily_quota = q;
        }
        if let Some(q) = u.stable_force_daily_quota {
            live.stable_force_daily_quota = q;
        }
        if let Some(q) = u.send_daily_quota {
            live.send_daily_quota = q;
        }
    }

    pub(crate) fn stats(&self) -> WechatStats {
        let now = self.clock.now_ms();
        let c = &self.counters;
        let cb = &self.callback_counters;
        WechatStats {
            received: c.received.load(Ordering::Relaxed),
            delivered: c.delivered.load(Ordering::Relaxed),
            duplicates: c.duplicates.load(Ordering::Relaxed),
            errors: self.errors.snapshot(),
            token_fetches: c.token_fetches.load(Ordering::Relaxed),
            stable_token_fetches: c.stable_token_fetches.load(Ordering::Relaxed),
            callbacks_sent: cb.sent.load(Ordering::Relaxed),
            callbacks_failed: cb.failed.load(Ordering::Relaxed),
            callbacks_dropped: cb.dropped.load(Ordering::Relaxed),
            send_quota_used: self.send_quota.lock().used(now),
            token_quota_used: self.tokens.write().plain_quota.used(now),
        }
    }

    pub(crate) fn messages(&self, limit: usize, touser: Option<&str>) -> Vec<WechatMessage> {
        self.ring
            .snapshot(limit, |r| touser.is_none_or(|t| &*r.touser == t))
            .into_iter()
            .map(Record::into_message)
            .collect()
    }

    /// Forgets records, statistics, quotas used and the de-dup window. Issued tokens
    /// stay valid (a running client is not disturbed); faults and config are kept.
    pub(crate) fn reset(&self) {
        let c = &self.counters;
        for a in [
            &c.received,
            &c.delivered,
            &c.duplicates,
            &c.token_fetches,
            &c.stable_token_fetches,
            &self.callback_counters.sent,
            &self.callback_counters.failed,
            &self.callback_counters.dropped,
        ] {
            a.store(0, Ordering::Relaxed);
        }
        {
            let mut t = self.tokens.write();
            t.plain_quota = DailyCounter::default();
            t.force_quota = DailyCounter::default();
            t.last_force_ms = None;
        }
        *self.send_quota.lock() = DailyCounter::default();
        self.dedup.clear();
        self.errors.clear();
        self.ring.clear();
    }

    /// The access token check every API of the app makes: the same tokens
    /// serve the mini-program's subscribe messages.
    pub(crate) fn check_token(&self, token: Option<&str>, now_ms: u64) -> Result<(), WxError> {
        let token = token
            .filter(|t| !t.is_empty())
            .ok_or(WxError::MISSING_TOKEN)?;
        self.tokens.read().check(token, now_ms)
    }

    pub(crate) fn fail(&self, e: &WxError, now_ms: u64) -> Response {
        self.errors.add(e.code);
        tracing::debug!(errcode = e.code, errmsg = %e.msg, "wechat mock error answer");
        providers::json_200(providers::errcode_body(
            e.code,
            &e.msg,
            &self.rids.next(now_ms),
            "",
        ))
    }

    fn check_credentials(
        &self,
        grant_type: Option<&str>,
        appid: Option<&str>,
        secret: Option<&str>,
    ) -> Result<(), WxError> {
        if grant_type != Some("client_credential") {
            return Err(WxError::INVALID_GRANT);
        }
        let appid = appid
            .filter(|a| !a.is_empty())
            .ok_or(WxError::MISSING_APPID)?;
        if appid != self.appid {
            return Err(WxError::INVALID_APPID);
        }
        let secret = secret
            .filter(|s| !s.is_empty())
            .ok_or(WxError::MISSING_SECRET)?;
        if secret != self.secret {
            return Err(WxError::INVALID_SECRET);
        }
        Ok(())
    }

    /// `/cgi-bin/token`: a new token each call; the previous one dies 5 minutes later.
    fn issue_plain(&self, now_ms: u64) -> Result<(Box<str>, u64), WxError> {
        let (ttl, quota) = {
            let live = self.live.read();
            (live.token_ttl_ms, live.token_daily_quota)
        };
        let mut t = self.tokens.write();
        if !t.plain_quota.try_take(now_ms, quota) {
            return Err(WxError::QUOTA);
        }
        let prev = t.latest_plain.take();
        t.supersede(prev.as_deref(), now_ms);
        let token = t.mint(TokenKind::Plain, now_ms, ttl);
        t.latest_plain = Some(token.clone());
        Ok((token, ttl / 1000))
    }

    /// `/cgi-bin/stable_token`: the same token while it has more than 5 minutes left,
    /// unless `force` asks for a new one (rate-limited; the old one gets the overlap).
    fn issue_stable(&self, now_ms: u64, force: bool) -> Result<(Box<str>, u64), WxError> {
        let (ttl, force_quota) = {
            let live = self.live.read();
            (live.token_ttl_ms, live.stable_force_daily_quota)
        };
        let mut t = self.tokens.write();
        let current = t
            .latest_stable
            .as_deref()
            .and_then(|tok| t.map.get(tok).map(|rec| (tok, *rec)));
        if !force
            && let Some((tok, rec)) = current
            && rec.kind == TokenKind::Stable
            && rec.dead_at() > now_ms.saturating_add(OVERLAP_MS)
        {
            return Ok((tok.into(), (rec.dead_at() - now_ms) / 1000));
        }
        if force {
            if t.last_force_ms
                .is_some_and(|last| now_ms.saturating_sub(last) < FORCE_GAP_MS)
            {
                return Err(WxError::FREQ);
            }
            if !t.force_quota.try_take(now_ms, force_quota) {
                return Err(WxError::QUOTA);
            }
            t.last_force_ms = Some(now_ms);
            let prev = t.latest_stable.take();
            t.supersede(prev.as_deref(), now_ms);
        }
        // Without force the old token simply runs out (it has at most 5 minutes left).
        let token = t.mint(TokenKind::Stable, now_ms, ttl);
        t.latest_stable = Some(token.clone());
        Ok((token, ttl / 1000))
    }

    fn take(counter: &AtomicU32) -> bool {
        counter
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    /// The template send, minus HTTP. `Ok((msgid, duplicate))`.
    fn send(&self, token: Option<&str>, body: &Bytes, now_ms: u64) -> Result<(u64, bool), WxError> {
        let token = token
            .filter(|t| !t.is_empty())
            .ok_or(WxError::MISSING_TOKEN)?;
        self.tokens.read().check(token, now_ms)?;
        if Self::take(&self.system_busy_next) {
            return Err(WxError::SYSTEM_BUSY);
        }
        if Self::take(&self.quota_next) {
            return Err(WxError::QUOTA);
        }

        let msg: TemplateMsg<'_> = serde_json::from_slice(body).map_err(WxError::data_format)?;
        let touser = msg
            .touser
            .ok_or_else(|| WxError::data_format("touser missing"))?;
        let template_id = msg
            .template_id
            .ok_or_else(|| WxError::data_format("template_id missing"))?;
        let data_is_object = msg
            .data
            .is_some_and(|d| d.get().trim_start().starts_with('{'));
        if !data_is_object {
            return Err(WxError::data_format("data missing or not an object"));
        }
        {
            let live = self.live.read();
            let known = match &live.template_ids {
                Some(ids) => ids.contains(template_id.as_ref()),
                None => !template_id.is_empty(),
            };
            if !known {
                return Err(WxError::INVALID_TEMPLATE);
            }
        }
        if touser.is_empty() {
            return Err(WxError::INVALID_OPENID);
        }
        let client_msg_id = msg
            .client_msg_id
            .map(RawValue::get)
            .filter(|raw| *raw != "\"\"" && *raw != "null");

        let faults = self.faults.read().clone();
        // Everything that decides whether the message is accepted; under the de-dup
        // shard lock when a client_msg_id is given, so racing retries cannot both pass.
        let mut outcome: Result<u64, WxError> = Err(WxError::SYSTEM_BUSY);
        let mut accept = || {
            outcome = self.accept(&touser, &faults, now_ms);
            outcome.as_ref().ok().copied()
        };
        match client_msg_id {
            Some(cmid) => {
                let mut h = Xxh3::new();
                h.update(touser.as_bytes());
                h.update(&[0xff]);
                h.update(cmid.as_bytes());
                let key = h.digest128();
                if let Some(first) =
                    self.dedup
                        .check_or_insert(key, now_ms, CLIENT_MSG_WINDOW_MS, accept)
                {
                    self.counters.duplicates.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%touser, msgid = first, "wechat mock: client_msg_id duplicate");
                    return Ok((first, true));
                }
            }
            None => {
                accept();
            }
        }
        let msgid = outcome?;
        self.delivered(msgid, &touser, body, &faults, now_ms);
        Ok((msgid, false))
    }

    /// Per-openid faults, then the daily quota; a msgid if the message is accepted.
    fn accept(&self, touser: &str, faults: &FaultLists, now_ms: u64) -> Result<u64, WxError> {
        if faults.invalid.contains(touser) {
            return Err(WxError::INVALID_OPENID);
        }
        if faults.unsubscribed.contains(touser) {
            return Err(WxError::UNSUBSCRIBED);
        }
        if faults.blocked.contains(touser) {
            return Err(WxError::BLOCKED);
        }
        let limit = self.live.read().send_daily_quota;
        if !self.send_quota.lock().try_take(now_ms, limit) {
            return Err(WxError::QUOTA);
        }
        Ok(self.next_msgid.fetch_add(1, Ordering::Relaxed))
    }

    fn delivered(&self, msgid: u64, touser: &str, body: &Bytes, faults: &FaultLists, now_ms: u64) {
        self.counters.delivered.fetch_add(1, Ordering::Relaxed);
        self.ring.push(Record {
            msgid,
            at_ms: now_ms,
            touser: touser.into(),
            body: Bytes::copy_from_slice(body),
        });
        let url = self.live.read().callback_url.clone();
        if let Some(url) = url {
            let status = if faults.callback_block.contains(touser) {
                "failed:user block"
            } else if faults.callback_fail.contains(touser) {
                "failed: system failed"
            } else {
                "success"
            };
            let xml = callback_xml(&self.original_id, touser, now_ms / 1000, msgid, status);
            let (query, body) = match &self.signer {
                None => (Vec::new(), xml),
                Some(signer) => {
                    let nonce = (xxhash_rust::xxh3::xxh3_64(&msgid.to_le_bytes()) % 1_000_000_000)
                        .to_string();
                    let signed = signer.sign(touser, xml, now_ms / 1000, &nonce);
                    (signed.query, signed.body)
                }
            };
            self.enqueue_callback(CallbackJob { url, query, body });
        }
    }

    fn enqueue_callback(&self, job: CallbackJob) {
        let mut guard = self.callbacks.lock();
        if guard.as_ref().is_none_or(|tx| tx.is_closed()) {
            let Ok(rt) = tokio::runtime::Handle::try_current() else {
                self.callback_counters
                    .dropped
                    .fetch_add(1, Ordering::Relaxed);
                return;
            };
            let (tx, rx) = mpsc::channel(CALLBACK_QUEUE);
            rt.spawn(callback_worker(rx, self.callback_counters.clone()));
            *guard = Some(tx);
        }
        if let Some(tx) = guard.as_ref()
            && tx.try_send(job).is_err()
        {
            self.callback_counters
                .dropped
                .fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn template_set(ids: Option<Vec<String>>) -> Option<HashSet<Box<str>>> {
    ids.map(|v| v.into_iter().map(String::into_boxed_str).collect())
}

/// What the send route reads from a template message; the rest is kept verbatim.
#[derive(Deserialize)]
struct TemplateMsg<'a> {
    #[serde(borrow, default)]
    touser: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    template_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
    #[serde(borrow, default)]
    client_msg_id: Option<&'a RawValue>,
}

fn cdata(text: &str) -> String {
    format!("<![CDATA[{}]]>", text.replace("]]>", "]]]]><![CDATA[>"))
}

fn callback_xml(original_id: &str, openid: &str, secs: u64, msgid: u64, status: &str) -> String {
    format!(
        "<xml><ToUserName>{}</ToUserName><FromUserName>{}</FromUserName>\
         <CreateTime>{secs}</CreateTime><MsgType><![CDATA[event]]></MsgType>\
         <Event><![CDATA[TEMPLATESENDJOBFINISH]]></Event><MsgID>{msgid}</MsgID>\
         <Status>{}</Status></xml>",
        cdata(original_id),
        cdata(openid),
        cdata(status)
    )
}

/// Posts queued callbacks, a bounded number at a time, until the state is dropped.
async fn callback_worker(mut rx: mpsc::Receiver<CallbackJob>, counters: Arc<CallbackCounters>) {
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "wechat mock: no HTTP client for callbacks");
            return;
        }
    };
    let permits = Arc::new(Semaphore::new(CALLBACK_CONCURRENCY));
    while let Some(job) = rx.recv().await {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let client = client.clone();
        let counters = counters.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let result = client
                .post(&*job.url)
                .query(&job.query)
                .header("content-type", "text/xml")
                .body(job.body)
                .send()
                .await;
            match result {
                Ok(resp) if resp.status().is_success() => {
                    counters.sent.fetch_add(1, Ordering::Relaxed);
                }
                Ok(resp) => {
                    counters.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(url = %job.url, status = resp.status().as_u16(), "wechat mock: callback refused");
                }
                Err(e) => {
                    counters.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(url = %job.url, error = %e, "wechat mock: callback failed");
                }
            }
        });
    }
}

/// Routes of the WeChat mock, provider paths and `/_mock/wechat/*` controls.
pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .route("/cgi-bin/token", get(token))
        .route("/cgi-bin/stable_token", post(stable_token))
        .route("/cgi-bin/message/template/send", post(template_send))
        .route("/_mock/wechat/faults", get(get_faults).post(set_faults))
        .route("/_mock/wechat/config", get(get_config).post(set_config))
        .route("/_mock/wechat/stats", get(stats))
        .route("/_mock/wechat/messages", get(messages))
        .route("/_mock/wechat/clock", post(move_clock))
}

#[derive(Deserialize)]
struct TokenQuery {
    grant_type: Option<String>,
    appid: Option<String>,
    secret: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct AccessTokenQuery {
    pub(crate) access_token: Option<String>,
}

#[derive(Serialize)]
struct TokenAnswer<'a> {
    access_token: &'a str,
    expires_in: u64,
}

pub(crate) async fn with_latency(state: &MockState, resp: Response) -> Response {
    let ms = state.shared.wechat.faults.read().given.latency_ms;
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    resp
}

fn token_answer(token: &str, expires_in: u64) -> Response {
    let body = serde_json::to_string(&TokenAnswer {
        access_token: token,
        expires_in,
    })
    .unwrap_or_default();
    providers::json_200(body)
}

async fn token(
    State(state): State<MockState>,
    q: Result<Query<TokenQuery>, QueryRejection>,
) -> Response {
    let wx = &state.shared.wechat;
    let now = wx.clock.now_ms();
    let result = match &q {
        Ok(Query(q)) => wx
            .check_credentials(
                q.grant_type.as_deref(),
                q.appid.as_deref(),
                q.secret.as_deref(),
            )
            .and_then(|()| wx.issue_plain(now)),
        Err(_) => Err(WxError::INVALID_GRANT),
    };
    let resp = match result {
        Ok((tok, expires_in)) => {
            wx.counters.token_fetches.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(expires_in, "wechat mock: token issued");
            token_answer(&tok, expires_in)
        }
        Err(e) => wx.fail(&e, now),
    };
    with_latency(&state, resp).await
}

#[derive(Deserialize)]
struct StableTokenBody {
    grant_type: Option<String>,
    appid: Option<String>,
    secret: Option<String>,
    #[serde(default)]
    force_refresh: bool,
}

async fn stable_token(State(state): State<MockState>, body: Bytes) -> Response {
    let wx = &state.shared.wechat;
    let now = wx.clock.now_ms();
    let result = serde_json::from_slice::<StableTokenBody>(&body)
        .map_err(WxError::data_format)
        .and_then(|b| {
            wx.check_credentials(
                b.grant_type.as_deref(),
                b.appid.as_deref(),
                b.secret.as_deref(),
            )?;
            wx.issue_stable(now, b.force_refresh)
        });
    let resp = match result {
        Ok((tok, expires_in)) => {
            wx.counters
                .stable_token_fetches
                .fetch_add(1, Ordering::Relaxed);
            token_answer(&tok, expires_in)
        }
        Err(e) => wx.fail(&e, now),
    };
    with_latency(&state, resp).await
}

async fn template_send(
    State(state): State<MockState>,
    q: Result<Query<AccessTokenQuery>, QueryRejection>,
    body: Bytes,
) -> Response {
    let wx = &state.shared.wechat;
    let now = wx.clock.now_ms();
    wx.counters.received.fetch_add(1, Ordering::Relaxed);
    let token = q
        .as_ref()
        .ok()
        .and_then(|Query(q)| q.access_token.as_deref());
    let resp = match wx.send(token, &body, now) {
        Ok((msgid, _)) => {
            providers::json_200(format!(r#"{{"errcode":0,"errmsg":"ok","msgid":{msgid}}}"#))
        }
        Err(e) => wx.fail(&e, now),
    };
    with_latency(&state, resp).await
}

pub(crate) fn bad_request(message: String) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(serde_json::json!({ "error": { "code": "bad_request", "message": message } })),
    )
        .into_response()
}

async fn get_faults(State(state): State<MockState>) -> Response {
    Json(state.shared.wechat.faults()).into_response()
}

async fn set_faults(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<WechatFaults>(&body) {
        Ok(f) => {
            state.shared.wechat.set_faults(f);
            Json(state.shared.wechat.faults()).into_response()
        }
        Err(e) => bad_request(format!("wechat faults: {e}")),
    }
}

async fn get_config(State(state): State<MockState>) -> Response {
    Json(state.shared.wechat.settings()).into_response()
}

async fn set_config(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<SettingsUpdate>(&body) {
        Ok(u) => {
            state.shared.wechat.update_settings(u);
            Json(state.shared.wechat.settings()).into_response()
        }
        Err(e) => bad_request(format!("wechat config: {e}")),
    }
}

async fn stats(State(state): State<MockState>) -> Response {
    Json(state.shared.wechat.stats()).into_response()
}

#[derive(Deserialize)]
struct MessagesQuery {
    limit: Option<usize>,
    touser: Option<String>,
}

async fn messages(State(state): State<MockState>, Query(q): Query<MessagesQuery>) -> Response {
    let limit = q.limit.unwrap_or(WECHAT_RING_CAPACITY);
    Json(state.shared.wechat.messages(limit, q.touser.as_deref())).into_response()
}

async fn move_clock(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<ClockMove>(&body) {
        Ok(m) => {
            let wx = &state.shared.wechat;
            wx.clock.advance(
                m.advance_secs
                    .saturating_mul(1000)
                    .saturating_add(m.advance_ms),
            );
            Json(serde_json::json!({
                "now_ms": wx.clock.now_ms(),
                "offset_ms": wx.clock.offset_ms(),
            }))
            .into_response()
        }
        Err(e) => bad_request(format!("clock: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> WechatState {
        WechatState::with_clock(WechatConfig::default(), Clock::frozen(1_700_000_000_000))
    }

    fn body(touser: &str, cmid: Option<&str>) -> Bytes {
        let mut v = serde_json::json!({"touser": touser, "template_id": "T", "data": {}});
        if let Some(c) = cmid {
            v["client_msg_id"] = c.into();
        }
        Bytes::from(v.to_string())
    }

    #[test]
    fn plain_tokens_overlap_then_die() {
        let s = state();
        let now = s.clock.now_ms();
        let (a, _) = s.issue_plain(now).unwrap();
        let (b, _) = s.issue_plain(now + 1000).unwrap();
        assert!(s.send(Some(&a), &body("o1", None), now + 1000).is_ok());
        assert!(s.send(Some(&b), &body("o1", None), now + 1000).is_ok());
        let later = now + 1000 + OVERLAP_MS;
        let e = s.send(Some(&a), &body("o1", None), later).unwrap_err();
        assert_eq!(e.code, 40001);
        assert!(s.send(Some(&b), &body("o1", None), later).is_ok());
        let e = s
            .send(Some(&b), &body("o1", None), now + 1000 + 7_200_000)
            .unwrap_err();
        assert_eq!(e.code, 42001);
    }

    #[test]
    fn client_msg_id_is_per_openid_and_expires() {
        let s = state();
        let now = s.clock.now_ms();
        let (t, _) = s.issue_plain(now).unwrap();
        let (m1, dup) = s.send(Some(&t), &body("o1", Some("c1")), now).unwrap();
        assert!(!dup);
        assert_eq!(
            s.send(Some(&t), &body("o1", Some("c1")), now + 1).unwrap(),
            (m1, true)
        );
        let (m2, dup) = s.send(Some(&t), &body("o2", Some("c1")), now + 2).unwrap();
        assert!(!dup && m2 != m1);
        let (m3, dup) = s
            .send(
                Some(&t),
                &body("o1", Some("c1")),
                now + CLIENT_MSG_WINDOW_MS,
            )
            .unwrap();
        assert!(!dup && m3 != m1);
    }

    #[test]
    fn refused_message_does_not_claim_client_msg_id() {
        let s = state();
        let now = s.clock.now_ms();
        let (t, _) = s.issue_plain(now).unwrap();
        s.set_faults(WechatFaults {
            blocked: vec!["o1".into()],
            ..WechatFaults::default()
        });
        assert_eq!(
            s.send(Some(&t), &body("o1", Some("c")), now)
                .unwrap_err()
                .code,
            43019
        );
        s.set_faults(WechatFaults::default());
        let (_, dup) = s.send(Some(&t), &body("o1", Some("c")), now).unwrap();
        assert!(!dup);
    }
}
