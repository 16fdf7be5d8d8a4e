//! WeCom (企业微信) app-message mock: `/cgi-bin/gettoken`, `/cgi-bin/message/send`
//! and `/cgi-bin/message/recall`.
//!
//! Why it behaves this way: a mass-push channel to WeCom lives or dies by the rules the
//! real API enforces quietly. The mock therefore checks the agent id, the 1000-user /
//! 100-party / 100-tag limits and the 2048-byte text limit, resolves recipients against
//! a small directory (parties and tags from the faults, any user valid unless listed
//! invalid), reports `invaliduser`/`invalidparty`/`invalidtag` (81013 when nobody is
//! left), honours `enable_duplicate_check` on the byte-identical body, and drops
//! messages beyond 30 per minute / 1000 per hour per member *silently* (errcode 0),
//! counting them in `dropped_member_limit` so a test can see what the real API hides.
//! `gettoken` returns the same token while it is valid, as WeCom documents.
//!
//! Memory stays bounded: the call ring is fixed-size (calls can carry 1000 users, so it
//! is smaller than the WeChat one), the duplicate-check map forgets bodies after 4 h,
//! the per-member windows are pruned once their hour has passed, and the recall log is
//! eight bytes per call, trimmed after 48 h.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use xxhash_rust::xxh3::{Xxh3DefaultBuilder, xxh3_64, xxh3_128};

use crate::MockState;
use crate::providers::{
    self, Clock, ClockMove, ErrorTally, HOUR_MS, MINUTE_MS, Rids, Ring, TimedDedup,
};

/// How many accepted send calls `GET /_mock/wecom/messages` can show.
pub const WECOM_RING_CAPACITY: usize = 1_000;

const MAX_USERS: usize = 1000;
const MAX_PARTIES: usize = 100;
const MAX_TAGS: usize = 100;
const MAX_CONTENT_BYTES: usize = 2048;
const PER_MINUTE: u32 = 30;
const PER_HOUR: u32 = 1000;
/// `duplicate_check_interval` default and ceiling (seconds).
const DUP_DEFAULT_SECS: u64 = 1800;
const DUP_MAX_SECS: u64 = 4 * 3600;
const RECALL_WINDOW_MS: u64 = 24 * HOUR_MS;
/// Sent messages are remembered this long for recall (so late recalls get 301060).
const RECALL_KEEP_MS: u64 = 48 * HOUR_MS;
const RECALLED_BIT: u64 = 1 << 63;
const MEMBER_SHARDS: usize = 16;

const MSGTYPES: &[&str] = &[
    "text",
    "image",
    "voice",
    "video",
    "file",
    "textcard",
    "news",
    "mpnews",
    "markdown",
    "miniprogram_notice",
    "template_card",
    "interactive_taskcard",
];

/// How the WeCom mock starts out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WecomConfig {
    pub corpid: String,
    pub corpsecret: String,
    pub agentid: u64,
    /// Lifetime of issued access tokens.
    pub token_ttl_secs: u64,
    pub faults: WecomFaults,
}

impl Default for WecomConfig {
    fn default() -> Self {
        WecomConfig {
            corpid: "wwmockcorp".to_owned(),
            corpsecret: "mock-wecom-secret".to_owned(),
            agentid: 1_000_002,
            token_ttl_secs: 7200,
            faults: WecomFaults::default(),
        }
    }
}

/// Misbehaviour and directory; `POST /_mock/wecom/faults` replaces all of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WecomFaults {
    /// The next N sends answer 45033 (api concurrent out of limit).
    pub busy_next: u32,
    /// The next N sends answer 45009 (api freq out of limit).
    pub freq_next: u32,
    /// The next N sends answer -1 (system busy).
    pub system_busy_next: u32,
    /// One-shot: every token issued so far answers 42001 from now on. Reads back false.
    pub expire_tokens: bool,
    /// Userids that do not exist (compared case-insensitively).
    pub invalid_users: Vec<String>,
    /// Party id -> member userids. Parties not listed are invalid.
    pub parties: BTreeMap<String, Vec<String>>,
    /// Tag id -> member userids. Tags not listed are invalid.
    pub tags: BTreeMap<String, Vec<String>>,
    /// Delay added before every WeCom answer.
    pub latency_ms: u64,
}

/// `GET /_mock/wecom/stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WecomStats {
    /// `message/send` calls, whatever their outcome.
    pub send_calls: u64,
    /// Valid distinct recipients of accepted calls (delivered + dropped).
    pub person_times: u64,
    /// Recipients that got the message.
    pub delivered_users: u64,
    /// Calls answered with an earlier msgid by `enable_duplicate_check`.
    pub duplicates: u64,
    /// Recipients silently dropped by the 30/min or 1000/h per-member limit.
    pub dropped_member_limit: u64,
    /// Messages recalled.
    pub recalled: u64,
    /// Non-zero `errcode` answers of every WeCom route, by code.
    pub errors: BTreeMap<String, u64>,
    /// Tokens issued by `gettoken` (a repeat answer with the same token not counted).
    pub token_fetches: u64,
    /// `gettoken` calls answered with a token (new or the same).
    pub token_calls: u64,
}

/// One accepted send call; `GET /_mock/wecom/messages`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WecomMessage {
    pub msgid: String,
    pub msgtype: String,
    /// `touser` as sent, split at `|`.
    pub touser: Vec<String>,
    pub toparty: String,
    pub totag: String,
    /// Lower-cased userids that got it (member-limit drops left out).
    pub delivered: Vec<String>,
    /// Mock clock (unix ms) when it was accepted.
    pub at_ms: u64,
    pub body: serde_json::Value,
}

#[derive(Debug, Clone)]
struct WcError {
    code: i64,
    msg: Cow<'static, str>,
    /// Already-serialized `,"invaliduser":...` pairs for 81013.
    extra: String,
}

impl WcError {
    const fn new(code: i64, msg: &'static str) -> WcError {
        WcError {
            code,
            msg: Cow::Borrowed(msg),
            extra: String::new(),
        }
    }
    fn owned(code: i64, msg: String) -> WcError {
        WcError {
            code,
            msg: Cow::Owned(msg),
            extra: String::new(),
        }
    }
    const SYSTEM_BUSY: WcError = WcError::new(-1, "system busy");
    const MISSING_TOKEN: WcError = WcError::new(41001, "access_token missing");
    const INVALID_TOKEN: WcError = WcError::new(40014, "invalid access_token");
    const EXPIRED_TOKEN: WcError = WcError::new(42001, "access_token expired");
    const BUSY: WcError = WcError::new(45033, "api concurrent out of limit");
    const FREQ: WcError = WcError::new(45009, "api freq out of limit");
    const MISSING_CORPID: WcError = WcError::new(41002, "corpid missing");
    const MISSING_SECRET: WcError = WcError::new(41004, "corpsecret missing");
    const INVALID_CORPID: WcError = WcError::new(40013, "invalid corpid");
    const INVALID_SECRET: WcError = WcError::new(40001, "invalid credential");
    const MISSING_AGENTID: WcError = WcError::new(41011, "missing agentid");
    const INVALID_AGENTID: WcError = WcError::new(40056, "invalid agentid");
    const INVALID_MSGTYPE: WcError = WcError::new(40008, "invalid message type");
    const UNKNOWN_MSGID: WcError = WcError::new(301059, "invalid msgid");
    const RECALL_EXPIRED: WcError = WcError::new(301060, "msg expired, can not recall");

    fn data_format(detail: impl std::fmt::Display) -> WcError {
        WcError::owned(47001, format!("data format error hint: [{detail}]"))
    }
    fn param(detail: impl std::fmt::Display) -> WcError {
        WcError::owned(40058, format!("invalid parameter: {detail}"))
    }
}

/// Fault lists as given plus lookup structures (lower-cased userids).
struct Directory {
    given: WecomFaults,
    invalid_users: HashSet<Box<str>>,
    parties: HashMap<Box<str>, Vec<Box<str>>>,
    tags: HashMap<Box<str>, Vec<Box<str>>>,
}

impl Directory {
    fn new(mut f: WecomFaults) -> Directory {
        let lower = |v: &[String]| -> Vec<Box<str>> {
            v.iter()
                .map(|u| u.to_ascii_lowercase().into_boxed_str())
                .collect()
        };
        f.busy_next = 0;
        f.freq_next = 0;
        f.system_busy_next = 0;
        f.expire_tokens = false;
        Directory {
            invalid_users: lower(&f.invalid_users).into_iter().collect(),
            parties: f
                .parties
                .iter()
                .map(|(k, v)| (Box::from(k.as_str()), lower(v)))
                .collect(),
            tags: f
                .tags
                .iter()
                .map(|(k, v)| (Box::from(k.as_str()), lower(v)))
                .collect(),
            given: f,
        }
    }
}

#[derive(Default)]
struct Tokens {
    map: HashMap<Box<str>, u64>,
    current: Option<Box<str>>,
    seq: u64,
}

#[derive(Default, Clone, Copy)]
struct MemberWindow {
    minute_start: u64,
    minute_count: u32,
    hour_start: u64,
    hour_count: u32,
}

#[derive(Default)]
struct MemberShard {
    map: HashMap<u64, MemberWindow, Xxh3DefaultBuilder>,
    prune_at: usize,
}

/// Per-member 30/min, 1000/h windows, each starting at the first message after the
/// previous window ended.
struct MemberLimits {
    shards: Box<[Mutex<MemberShard>]>,
}

impl MemberLimits {
    fn new() -> MemberLimits {
        MemberLimits {
            shards: (0..MEMBER_SHARDS)
                .map(|_| {
                    Mutex::new(MemberShard {
                        map: HashMap::default(),
                        prune_at: 4096,
                    })
                })
                .collect(),
        }
    }

    /// True if `user` may get one more message now (and counts it).
    fn admit(&self, user: &str, now_ms: u64) -> bool {
        let key = xxh3_64(user.as_bytes());
        let mut s = self.shards[(key % MEMBER_SHARDS as u64) as usize].lock();
        if s.map.len() >= s.prune_at {
            s.map
                .retain(|_, w| now_ms.saturating_sub(w.hour_start) < HOUR_MS);
            s.prune_at = (s.map.len() * 2).max(4096);
        }
        let w = s.map.entry(key).or_insert(MemberWindow {
            minute_start: now_ms,
            minute_count: 0,
            hour_start: now_ms,
            hour_count: 0,
        });
        if now_ms.saturating_sub(w.minute_start) >= MINUTE_MS {
            w.minute_start = now_ms;
            w.minute_count = 0;
        }
        if now_ms.saturating_sub(w.hour_start) >= HOUR_MS {
            w.hour_start = now_ms;
            w.hour_count = 0;
        }
        if w.minute_count >= PER_MINUTE || w.hour_count >= PER_HOUR {
            return false;
        }
        w.minute_count += 1;
        w.hour_count += 1;
        true
    }

    fn clear(&self) {
        for s in self.shards.iter() {
            let mut s = s.lock();
            s.map = HashMap::default();
            s.prune_at = 4096;
        }
    }
}

/// Send times of every message by sequence number, for recall; the top bit marks a
/// recalled message. Sequence `first_seq + i` lives at index `i`.
#[derive(Default)]
struct RecallLog {
    first_seq: u64,
    times: VecDeque<u64>,
}

impl RecallLog {
    fn push(&mut self, now_ms: u64) -> u64 {
        while let Some(&front) = self.times.front() {
            if now_ms.saturating_sub(front & !RECALLED_BIT) < RECALL_KEEP_MS {
                break;
            }
            self.times.pop_front();
            self.first_seq += 1;
        }
        let seq = self.first_seq + self.times.len() as u64;
        self.times.push_back(now_ms);
        seq
    }

    fn get_mut(&mut self, seq: u64) -> Option<&mut u64> {
        let i = seq.checked_sub(self.first_seq)?;
        self.times.get_mut(usize::try_from(i).ok()?)
    }
}

fn msgid_text(seq: u64) -> String {
    format!("wcm{seq:x}x{:08x}", providers::mix64(seq) as u32)
}

fn msgid_seq(text: &str) -> Option<u64> {
    let (seq, check) = text.strip_prefix("wcm")?.split_once('x')?;
    let seq = u64::from_str_radix(seq, 16).ok()?;
    (u32::from_str_radix(check, 16).ok()? == providers::mix64(seq) as u32).then_some(seq)
}

#[derive(Default)]
struct Counters {
    send_calls: AtomicU64,
    person_times: AtomicU64,
    delivered_users: AtomicU64,
    duplicates: AtomicU64,
    dropped_member_limit: AtomicU64,
    recalled: AtomicU64,
    token_fetches: AtomicU64,
    token_calls: AtomicU64,
}

#[derive(Clone)]
struct Record {
    msgid: Box<str>,
    msgtype: Box<str>,
    at_ms: u64,
    /// Lower-cased delivered userids joined by `|`.
    delivered: Box<str>,
    body: Bytes,
}

impl Record {
    fn into_message(self) -> WecomMessage {
        let body: serde_json::Value = serde_json::from_slice(&self.body).unwrap_or_default();
        let field = |k: &str| match body.get(k) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        let split = |s: &str| -> Vec<String> {
            s.split('|')
                .filter(|x| !x.is_empty())
                .map(str::to_owned)
                .collect()
        };
        WecomMessage {
            msgid: self.msgid.into(),
            msgtype: self.msgtype.into(),
            touser: split(&field("touser")),
            toparty: field("toparty"),
            totag: field("totag"),
            delivered: split(&self.delivered),
            at_ms: self.at_ms,
            body,
        }
    }
}

/// Everything the WeCom mock keeps.
pub(crate) struct WecomState {
    pub(crate) clock: Clock,
    corpid: String,
    corpsecret: String,
    agentid: u64,
    token_ttl_ms: u64,
    directory: RwLock<Arc<Directory>>,
    busy_next: AtomicU32,
    freq_next: AtomicU32,
    system_busy_next: AtomicU32,
    tokens: RwLock<Tokens>,
    dup_check: TimedDedup<u64>,
    members: MemberLimits,
    recall: Mutex<RecallLog>,
    counters: Counters,
    errors: ErrorTally,
    rids: Rids,
    ring: Ring<Record>,
}

/// What a successful send answers.
struct Sent {
    msgid: String,
    invalid_users: Vec<Box<str>>,
    invalid_parties: Vec<Box<str>>,
    invalid_tags: Vec<Box<str>>,
}

impl WecomState {
    pub(crate) fn new(cfg: WecomConfig) -> WecomState {
        WecomState::with_clock(cfg, Clock::system())
    }

    pub(crate) fn with_clock(cfg: WecomConfig, clock: Clock) -> WecomState {
        let state = WecomState {
            clock,
            corpid: cfg.corpid,
            corpsecret: cfg.corpsecret,
            agentid: cfg.agentid,
            token_ttl_ms: cfg.token_ttl_secs.saturating_mul(1000),
            directory: RwLock::new(Arc::new(Directory::new(WecomFaults::default()))),
            busy_next: AtomicU32::new(0),
            freq_next: AtomicU32::new(0),
            system_busy_next: AtomicU32::new(0),
            tokens: RwLock::new(Tokens::default()),
            dup_check: TimedDedup::new(DUP_MAX_SECS * 1000),
            members: MemberLimits::new(),
            recall: Mutex::new(RecallLog {
                first_seq: 1,
                times: VecDeque::new(),
            }),
            counters: Counters::default(),
            errors: ErrorTally::default(),
            rids: Rids::new(0x5743_4f4d),
            ring: Ring::new(WECOM_RING_CAPACITY),
        };
        state.set_faults(cfg.faults);
        state
    }

    pub(crate) fn faults(&self) -> WecomFaults {
        let mut f = self.directory.read().given.clone();
        f.busy_next = self.busy_next.load(Ordering::Relaxed);
        f.freq_next = self.freq_next.load(Ordering::Relaxed);
        f.system_busy_next = self.system_busy_next.load(Ordering::Relaxed);
        f
    }

    pub(crate) fn set_faults(&self, f: WecomFaults) {
        if f.expire_tokens {
            let now = self.clock.now_ms();
            let mut t = self.tokens.write();
            for exp in t.map.values_mut() {
                *exp = (*exp).min(now);
            }
            tracing::info!(
                tokens = t.map.len(),
                "wecom mock: expired every issued token"
            );
        }
        self.busy_next.store(f.busy_next, Ordering::Relaxed);
        self.freq_next.store(f.freq_next, Ordering::Relaxed);
        self.system_busy_next
            .store(f.system_busy_next, Ordering::Relaxed);
        *self.directory.write() = Arc::new(Directory::new(f));
    }

    pub(crate) fn stats(&self) -> WecomStats {
        let c = &self.counters;
        WecomStats {
            send_calls: c.send_calls.load(Ordering::Relaxed),
            person_times: c.person_times.load(Ordering::Relaxed),
            delivered_users: c.delivered_users.load(Ordering::Relaxed),
            duplicates: c.duplicates.load(Ordering::Relaxed),
            dropped_member_limit: c.dropped_member_limit.load(Ordering::Relaxed),
            recalled: c.recalled.load(Ordering::Relaxed),
            errors: self.errors.snapshot(),
            token_fetches: c.token_fetches.load(Ordering::Relaxed),
            token_calls: c.token_calls.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn messages(&self, limit: usize, touser: Option<&str>) -> Vec<WecomMessage> {
        let user = touser.map(str::to_ascii_lowercase);
        self.ring
            .snapshot(limit, |r| {
                user.as_deref()
                    .is_none_or(|u| r.delivered.split('|').any(|d| d == u))
            })
            .into_iter()
            .map(Record::into_message)
            .collect()
    }

    /// Forgets records, statistics, duplicate-check bodies and member windows. Tokens
    /// and sent msgids (for recall) stay; faults are kept.
    pub(crate) fn reset(&self) {
        let c = &self.counters;
        for a in [
            &c.send_calls,
            &c.person_times,
            &c.delivered_users,
            &c.duplicates,
            &c.dropped_member_limit,
            &c.recalled,
            &c.token_fetches,
            &c.token_calls,
        ] {
            a.store(0, Ordering::Relaxed);
        }
        self.dup_check.clear();
        self.members.clear();
        self.errors.clear();
        self.ring.clear();
    }

    fn fail(&self, e: &WcError, now_ms: u64) -> Response {
        self.errors.add(e.code);
        tracing::debug!(errcode = e.code, errmsg = %e.msg, "wecom mock error answer");
        providers::json_200(providers::errcode_body(
            e.code,
            &e.msg,
            &self.rids.next(now_ms),
            &e.extra,
        ))
    }

    /// `gettoken`: the same token while it is valid, a new one after it died.
    /// `Ok((token, expires_in, new))`.
    fn issue_token(
        &self,
        corpid: Option<&str>,
        secret: Option<&str>,
        now_ms: u64,
    ) -> Result<(Box<str>, u64, bool), WcError> {
        let corpid = corpid
            .filter(|c| !c.is_empty())
            .ok_or(WcError::MISSING_CORPID)?;
        if corpid != self.corpid {
            return Err(WcError::INVALID_CORPID);
        }
        let secret = secret
            .filter(|s| !s.is_empty())
            .ok_or(WcError::MISSING_SECRET)?;
        if secret != self.corpsecret {
            return Err(WcError::INVALID_SECRET);
        }
        let mut t = self.tokens.write();
        if let Some(cur) = t.current.as_deref()
            && let Some(&exp) = t.map.get(cur)
            && exp > now_ms
        {
            return Ok((cur.into(), (exp - now_ms) / 1000, false));
        }
        t.seq += 1;
        let a = providers::mix64(now_ms ^ t.seq.rotate_left(29));
        let b = providers::mix64(a ^ t.seq);
        let token: Box<str> = format!("{}-MOCKWC{a:016x}{b:016x}", t.seq).into();
        if t.map.len() >= 256 {
            t.map
                .retain(|_, exp| exp.saturating_add(providers::DAY_MS) > now_ms);
        }
        t.map
            .insert(token.clone(), now_ms.saturating_add(self.token_ttl_ms));
        t.current = Some(token.clone());
        Ok((token, self.token_ttl_ms / 1000, true))
    }

    fn check_token(&self, token: Option<&str>, now_ms: u64) -> Result<(), WcError> {
        let token = token
            .filter(|t| !t.is_empty())
            .ok_or(WcError::MISSING_TOKEN)?;
        match self.tokens.read().map.get(token) {
            None => Err(WcError::INVALID_TOKEN),
            Some(&exp) if exp <= now_ms => Err(WcError::EXPIRED_TOKEN),
            Some(_) => Ok(()),
        }
    }

    fn take(counter: &AtomicU32) -> bool {
        counter
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    /// The send, minus HTTP.
    fn send(&self, token: Option<&str>, body: &Bytes, now_ms: u64) -> Result<Sent, WcError> {
        self.check_token(token, now_ms)?;
        if Self::take(&self.system_busy_next) {
            return Err(WcError::SYSTEM_BUSY);
        }
        if Self::take(&self.busy_next) {
            return Err(WcError::BUSY);
        }
        if Self::take(&self.freq_next) {
            return Err(WcError::FREQ);
        }
        let fields: HashMap<Cow<'_, str>, &RawValue> =
            serde_json::from_slice(body).map_err(WcError::data_format)?;
        let get = |k: &str| fields.get(k).copied().filter(|v| v.get() != "null");

        let agentid = get("agentid").ok_or(WcError::MISSING_AGENTID)?;
        if int_or_string(agentid) != Some(self.agentid) {
            return Err(WcError::INVALID_AGENTID);
        }
        let msgtype = get("msgtype")
            .and_then(|v| serde_json::from_str::<Cow<'_, str>>(v.get()).ok())
            .filter(|t| MSGTYPES.contains(&t.as_ref()))
            .ok_or(WcError::INVALID_MSGTYPE)?;
        let payload = get(&msgtype)
            .filter(|v| v.get().trim_start().starts_with('{'))
            .ok_or_else(|| WcError::param(format!("{msgtype} missing or not an object")))?;
        if msgtype == "text" || msgtype == "markdown" {
            let content = serde_json::from_str::<ContentOnly<'_>>(payload.get())
                .ok()
                .and_then(|c| c.content)
                .ok_or_else(|| {
                    WcError::owned(44004, format!("{msgtype}.content missing or empty"))
                })?;
            if content.is_empty() {
                return Err(WcError::owned(44004, format!("{msgtype}.content empty")));
            }
            if content.len() > MAX_CONTENT_BYTES {
                return Err(WcError::param(format!(
                    "{msgtype}.content exceeds {MAX_CONTENT_BYTES} bytes ({})",
                    content.len()
                )));
            }
        }

        let touser = get("touser").map(list_text).unwrap_or_default();
        let toparty = get("toparty").map(list_text).unwrap_or_default();
        let totag = get("totag").map(list_text).unwrap_or_default();
        let users: Vec<&str> = split_ids(&touser).collect();
        let parties: Vec<&str> = split_ids(&toparty).collect();
        let tags: Vec<&str> = split_ids(&totag).collect();
        if users.len() > MAX_USERS {
            return Err(WcError::param(format!(
                "touser exceeds {MAX_USERS} users ({})",
                users.len()
            )));
        }
        if parties.len() > MAX_PARTIES {
            return Err(WcError::param(format!(
                "toparty exceeds {MAX_PARTIES} parties ({})",
                parties.len()
            )));
        }
        if tags.len() > MAX_TAGS {
            return Err(WcError::param(format!(
                "totag exceeds {MAX_TAGS} tags ({})",
                tags.len()
            )));
        }

        let dup_check = get("enable_duplicate_check").and_then(int_or_string) == Some(1);
        let msgtype: Box<str> = msgtype.as_ref().into();
        let mut outcome: Result<Sent, WcError> = Err(WcError::SYSTEM_BUSY);
        let mut deliver = || {
            outcome = self.deliver(&users, &parties, &tags, &msgtype, body, now_ms);
            outcome.as_ref().ok().and_then(|s| msgid_seq(&s.msgid))
        };
        if dup_check {
            let secs = get("duplicate_check_interval")
                .and_then(int_or_string)
                .unwrap_or(DUP_DEFAULT_SECS)
                .clamp(1, DUP_MAX_SECS);
            let key = xxh3_128(body);
            if let Some(first) = self
                .dup_check
                .check_or_insert(key, now_ms, secs * 1000, deliver)
            {
                self.counters.duplicates.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(msgid = first, "wecom mock: duplicate-check hit");
                return Ok(Sent {
                    msgid: msgid_text(first),
                    invalid_users: Vec::new(),
                    invalid_parties: Vec::new(),
                    invalid_tags: Vec::new(),
                });
            }
        } else {
            deliver();
        }
        outcome
    }

    /// Resolves recipients, applies the member limits and records the call.
    fn deliver(
        &self,
        users: &[&str],
        parties: &[&str],
        tags: &[&str],
        msgtype: &str,
        body: &Bytes,
        now_ms: u64,
    ) -> Result<Sent, WcError> {
        let dir = self.directory.read().clone();
        let mut seen: HashSet<Box<str>> = HashSet::with_capacity(users.len());
        let mut recipients: Vec<Box<str>> = Vec::with_capacity(users.len());
        let mut invalid_users = Vec::new();
        let mut invalid_parties = Vec::new();
        let mut invalid_tags = Vec::new();
        let mut add = |u: &str, seen: &mut HashSet<Box<str>>| {
            if !seen.contains(u) {
                seen.insert(u.into());
                recipients.push(u.into());
            }
        };
        let everyone = users.contains(&"@all");
        if everyone {
            for members in dir.parties.values().chain(dir.tags.values()) {
                for m in members {
                    if !dir.invalid_users.contains(m) {
                        add(m, &mut seen);
                    }
                }
            }
        } else {
            for u in users {
                let lower: Box<str> = u.to_ascii_lowercase().into();
                if dir.invalid_users.contains(&lower) {
                    invalid_users.push(lower);
                } else {
                    add(&lower, &mut seen);
                }
            }
            for (ids, map, invalid) in [
                (parties, &dir.parties, &mut invalid_parties),
                (tags, &dir.tags, &mut invalid_tags),
            ] {
                for id in ids {
                    match map.get(*id) {
                        Some(members) => {
                            for m in members {
                                if !dir.invalid_users.contains(m) {
                                    add(m, &mut seen);
                                }
                            }
                        }
                        None => invalid.push(Box::from(*id)),
                    }
                }
            }
        }
        let named_anyone = everyone || !users.is_empty() || !parties.is_empty() || !tags.is_empty();
        let all_invalid = !everyone
            && recipients.is_empty()
            && (!invalid_users.is_empty()
                || !invalid_parties.is_empty()
                || !invalid_tags.is_empty()
                || !named_anyone);
        if all_invalid {
            let mut e = WcError::new(81013, "user & party & tag all invalid");
            e.extra = invalid_fields(&invalid_users, &invalid_parties, &invalid_tags);
            return Err(e);
        }

        let mut delivered = String::with_capacity(recipients.len() * 12);
        let mut dropped = 0u64;
        for r in &recipients {
            if self.members.admit(r, now_ms) {
                if !delivered.is_empty() {
                    delivered.push('|');
                }
                delivered.push_str(r);
            } else {
                dropped += 1;
            }
        }
        let person_times = recipients.len() as u64;
        let c = &self.counters;
        c.person_times.fetch_add(person_times, Ordering::Relaxed);
        c.delivered_users
            .fetch_add(person_times - dropped, Ordering::Relaxed);
        if dropped > 0 {
            c.dropped_member_limit.fetch_add(dropped, Ordering::Relaxed);
            tracing::debug!(dropped, "wecom mock: member rate limit dropped recipients");
        }
        let seq = self.recall.lock().push(now_ms);
        let msgid = msgid_text(seq);
        self.ring.push(Record {
            msgid: msgid.as_str().into(),
            msgtype: msgtype.into(),
            at_ms: now_ms,
            delivered: delivered.into(),
            body: Bytes::copy_from_slice(body),
        });
        Ok(Sent {
            msgid,
            invalid_users,
            invalid_parties,
            invalid_tags,
        })
    }

    fn recall(&self, token: Option<&str>, body: &Bytes, now_ms: u64) -> Result<(), WcError> {
        self.check_token(token, now_ms)?;
        let req: RecallBody<'_> = serde_json::from_slice(body).map_err(WcError::data_format)?;
        let msgid = req.msgid.ok_or_else(|| WcError::param("msgid missing"))?;
        let seq = msgid_seq(&msgid).ok_or(WcError::UNKNOWN_MSGID)?;
        let mut log = self.recall.lock();
        let at = log.get_mut(seq).ok_or(WcError::UNKNOWN_MSGID)?;
        if now_ms.saturating_sub(*at & !RECALLED_BIT) >= RECALL_WINDOW_MS {
            return Err(WcError::RECALL_EXPIRED);
        }
        // Recalling twice is answered ok again, but counted once.
        if *at & RECALLED_BIT == 0 {
            *at |= RECALLED_BIT;
            self.counters.recalled.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Moves a message's send time `secs` into the past; false if it is unknown.
    fn age(&self, msgid: &str, secs: u64) -> bool {
        let Some(seq) = msgid_seq(msgid) else {
            return false;
        };
        let mut log = self.recall.lock();
        let Some(at) = log.get_mut(seq) else {
            return false;
        };
        let flag = *at & RECALLED_BIT;
        let t = (*at & !RECALLED_BIT).saturating_sub(secs.saturating_mul(1000));
        *at = t | flag;
        true
    }
}

#[derive(Deserialize)]
struct ContentOnly<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RecallBody<'a> {
    #[serde(borrow, default)]
    msgid: Option<Cow<'a, str>>,
}

/// A `|`-joined id list given as a string (or, leniently, a number).
fn list_text(v: &RawValue) -> String {
    serde_json::from_str::<String>(v.get()).unwrap_or_else(|_| v.get().to_owned())
}

fn split_ids(s: &str) -> impl Iterator<Item = &str> {
    s.split('|').map(str::trim).filter(|x| !x.is_empty())
}

/// An integer given as a number or a numeric string (silenceper sends agentid as text).
fn int_or_string(v: &RawValue) -> Option<u64> {
    let raw = v.get().trim();
    raw.parse::<u64>().ok().or_else(|| {
        serde_json::from_str::<String>(raw)
            .ok()?
            .trim()
            .parse()
            .ok()
    })
}

fn join(ids: &[Box<str>]) -> String {
    let mut s = String::new();
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            s.push('|');
        }
        s.push_str(id);
    }
    s
}

fn invalid_fields(users: &[Box<str>], parties: &[Box<str>], tags: &[Box<str>]) -> String {
    let q = |ids: &[Box<str>]| serde_json::to_string(&join(ids)).unwrap_or_default();
    format!(
        r#","invaliduser":{},"invalidparty":{},"invalidtag":{},"unlicenseduser":"""#,
        q(users),
        q(parties),
        q(tags)
    )
}

/// Routes of the WeCom mock, provider paths and `/_mock/wecom/*` controls.
pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .route("/cgi-bin/gettoken", get(gettoken))
        .route("/cgi-bin/message/send", post(send))
        .route("/cgi-bin/message/recall", post(recall))
        .route("/_mock/wecom/faults", get(get_faults).post(set_faults))
        .route("/_mock/wecom/stats", get(stats))
        .route("/_mock/wecom/messages", get(messages))
        .route("/_mock/wecom/age", post(age))
        .route("/_mock/wecom/clock", post(move_clock))
}

async fn with_latency(state: &MockState, resp: Response) -> Response {
    let ms = state.shared.wecom.directory.read().given.latency_ms;
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    resp
}

#[derive(Deserialize)]
struct GetTokenQuery {
    corpid: Option<String>,
    corpsecret: Option<String>,
}

#[derive(Deserialize)]
struct AccessTokenQuery {
    access_token: Option<String>,
}

#[derive(Serialize)]
struct TokenAnswer<'a> {
    errcode: i64,
    errmsg: &'a str,
    access_token: &'a str,
    expires_in: u64,
}

async fn gettoken(
    State(state): State<MockState>,
    q: Result<Query<GetTokenQuery>, QueryRejection>,
) -> Response {
    let wc = &state.shared.wecom;
    let now = wc.clock.now_ms();
    let (corpid, secret) = match &q {
        Ok(Query(q)) => (q.corpid.as_deref(), q.corpsecret.as_deref()),
        Err(_) => (None, None),
    };
    let resp = match wc.issue_token(corpid, secret, now) {
        Ok((token, expires_in, new)) => {
            wc.counters.token_calls.fetch_add(1, Ordering::Relaxed);
            if new {
                wc.counters.token_fetches.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(expires_in, "wecom mock: token issued");
            }
            let body = serde_json::to_string(&TokenAnswer {
                errcode: 0,
                errmsg: "ok",
                access_token: &token,
                expires_in,
            })
            .unwrap_or_default();
            providers::json_200(body)
        }
        Err(e) => wc.fail(&e, now),
    };
    with_latency(&state, resp).await
}

async fn send(
    State(state): State<MockState>,
    q: Result<Query<AccessTokenQuery>, QueryRejection>,
    body: Bytes,
) -> Response {
    let wc = &state.shared.wecom;
    let now = wc.clock.now_ms();
    wc.counters.send_calls.fetch_add(1, Ordering::Relaxed);
    let token = q
        .as_ref()
        .ok()
        .and_then(|Query(q)| q.access_token.as_deref());
    let resp = match wc.send(token, &body, now) {
        Ok(sent) => {
            let msgid = serde_json::to_string(&sent.msgid).unwrap_or_default();
            let lists = invalid_fields(
                &sent.invalid_users,
                &sent.invalid_parties,
                &sent.invalid_tags,
            );
            providers::json_200(format!(
                r#"{{"errcode":0,"errmsg":"ok"{lists},"msgid":{msgid}}}"#
            ))
        }
        Err(e) => wc.fail(&e, now),
    };
    with_latency(&state, resp).await
}

async fn recall(
    State(state): State<MockState>,
    q: Result<Query<AccessTokenQuery>, QueryRejection>,
    body: Bytes,
) -> Response {
    let wc = &state.shared.wecom;
    let now = wc.clock.now_ms();
    let token = q
        .as_ref()
        .ok()
        .and_then(|Query(q)| q.access_token.as_deref());
    let resp = match wc.recall(token, &body, now) {
        Ok(()) => providers::json_200(r#"{"errcode":0,"errmsg":"ok"}"#.to_owned()),
        Err(e) => wc.fail(&e, now),
    };
    with_latency(&state, resp).await
}

fn bad_request(status: StatusCode, message: String) -> Response {
    (
        status,
        Json(serde_json::json!({ "error": { "code": "bad_request", "message": message } })),
    )
        .into_response()
}

async fn get_faults(State(state): State<MockState>) -> Response {
    Json(state.shared.wecom.faults()).into_response()
}

async fn set_faults(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<WecomFaults>(&body) {
        Ok(f) => {
            state.shared.wecom.set_faults(f);
            Json(state.shared.wecom.faults()).into_response()
        }
        Err(e) => bad_request(StatusCode::BAD_REQUEST, format!("wecom faults: {e}")),
    }
}

async fn stats(State(state): State<MockState>) -> Response {
    Json(state.shared.wecom.stats()).into_response()
}

#[derive(Deserialize)]
struct MessagesQuery {
    limit: Option<usize>,
    touser: Option<String>,
}

async fn messages(State(state): State<MockState>, Query(q): Query<MessagesQuery>) -> Response {
    let limit = q.limit.unwrap_or(WECOM_RING_CAPACITY);
    Json(state.shared.wecom.messages(limit, q.touser.as_deref())).into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgeBody {
    msgid: String,
    secs: u64,
}

async fn age(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<AgeBody>(&body) {
        Ok(a) => {
            if state.shared.wecom.age(&a.msgid, a.secs) {
                Json(serde_json::json!({ "ok": true })).into_response()
            } else {
                bad_request(StatusCode::NOT_FOUND, format!("unknown msgid {}", a.msgid))
            }
        }
        Err(e) => bad_request(StatusCode::BAD_REQUEST, format!("age: {e}")),
    }
}

async fn move_clock(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<ClockMove>(&body) {
        Ok(m) => {
            let wc = &state.shared.wecom;
            wc.clock.advance(
                m.advance_secs
                    .saturating_mul(1000)
                    .saturating_add(m.advance_ms),
            );
            Json(serde_json::json!({
                "now_ms": wc.clock.now_ms(),
                "offset_ms": wc.clock.offset_ms(),
            }))
            .into_response()
        }
        Err(e) => bad_request(StatusCode::BAD_REQUEST, format!("clock: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msgids_round_trip_and_reject_made_up_ones() {
        for seq in [1u64, 42, 1 << 40] {
            assert_eq!(msgid_seq(&msgid_text(seq)), Some(seq));
        }
        assert_eq!(msgid_seq("wcm2ax00000000"), None);
        assert_eq!(msgid_seq("hello"), None);
    }

    #[test]
    fn member_windows_reset_and_prune() {
        let m = MemberLimits::new();
        let t0 = 10 * HOUR_MS;
        assert!((0..30).all(|_| m.admit("u", t0)));
        assert!(!m.admit("u", t0 + 59_999));
        assert!(m.admit("u", t0 + MINUTE_MS));
        // Fill the shards with members whose windows will go stale; once a shard has
        // grown to twice what it held at its last prune, it drops the stale ones.
        for i in 0..80_000 {
            m.admit(&format!("x{i}"), t0);
        }
        let later = t0 + HOUR_MS + 1;
        for i in 0..80_000 {
            m.admit(&format!("y{i}"), later);
        }
        let total: usize = m.shards.iter().map(|s| s.lock().map.len()).sum();
        assert!(total < 120_000, "stale windows pruned, {total} left");
    }

    #[test]
    fn recall_log_trims_old_entries() {
        let mut log = RecallLog {
            first_seq: 1,
            times: VecDeque::new(),
        };
        let a = log.push(0);
        let b = log.push(RECALL_KEEP_MS);
        assert_eq!((a, b), (1, 2));
        assert!(log.get_mut(1).is_none());
        assert!(log.get_mut(2).is_some());
    }
}
