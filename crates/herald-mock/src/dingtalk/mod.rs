//! DingTalk work-notification mock (工作通知 of an enterprise internal app),
//! as `shared/reference/china-providers.md` §5.1 describes it:
//! `GET /gettoken?appkey=&appsecret=`,
//! `POST /topapi/message/corpconversation/asyncsend_v2?access_token=` and
//! `POST /topapi/message/corpconversation/getsendresult?access_token=`.
//!
//! Why it behaves as it does: a sender must cope with what DingTalk does.
//! Every answer is HTTP 200 with an `errcode`; `gettoken` hands out the same
//! token while it is valid and extends it; a send is a task, taken or not
//! as a whole; and DingTalk takes a task even when some of its users are
//! unknown or past a limit (the same content once a day to a user, 500 a
//! user a day), dropping those users silently. Only `getsendresult` (and
//! the stats) shows them, in `invalid_user_id_list` and
//! `forbidden_user_id_list`.
//!
//! Codes: `40014` (unknown token) and `42001` (expired token) are the
//! reference's [unverified for DingTalk]; `143103` (the app's recipients a
//! minute) is documented; `40089` (bad appkey/appsecret), `40056` (agent id
//! not the app's) and `40035` (bad parameter) are DingTalk's global-table
//! numbers as third parties list them [unverified].
//!
//! One clock, movable through `POST /_mock/dingtalk/clock`, drives token
//! expiry, the per-minute window and the per-day user limits (Beijing days).

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::MockState;
use crate::providers::{Clock, ClockMove, MINUTE_MS, Ring, beijing_day, json_200, mix64};
use crate::sms::CodeTally;
use crate::wechat::bad_request;

/// The internal app's AppKey `herald mock` serves without configuration.
pub const DEFAULT_DINGTALK_APPKEY: &str = "dingmockappkey0001";
/// Its AppSecret.
pub const DEFAULT_DINGTALK_APPSECRET: &str = "mock-dingtalk-app-secret";
/// Its AgentId.
pub const DEFAULT_DINGTALK_AGENT_ID: i64 = 2_000_001;
/// Lifetime of a token, as the real `expires_in`.
pub const DINGTALK_TOKEN_TTL_SECS: u64 = 7200;
/// Most userids in one `userid_list`.
pub const DINGTALK_MAX_USERS: usize = 100;
/// Largest `msg`, as JSON.
pub const DINGTALK_MAX_MSG_BYTES: usize = 2048;
/// Delivered user messages `GET /_mock/dingtalk/messages` can show.
pub const DINGTALK_RING_CAPACITY: usize = 100_000;
/// Tasks `getsendresult` remembers (the real one: the last 24 h).
const TASK_MEMORY: usize = 10_000;

const OK: i64 = 0;
const BUSY: i64 = -1;
const BAD_PARAM: i64 = 40035;
const BAD_TOKEN: i64 = 40014;
const TOKEN_EXPIRED: i64 = 42001;
const BAD_CREDENTIALS: i64 = 40089;
const BAD_AGENT: i64 = 40056;
const APP_QPM: i64 = 143103;

const MSGTYPES: [&str; 8] = [
    "text",
    "image",
    "voice",
    "file",
    "link",
    "oa",
    "markdown",
    "action_card",
];

/// The app the mock serves and its limits; `MockConfig::dingtalk`,
/// `GET|POST /_mock/dingtalk/config`. Zero turns a limit off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DingtalkConfig {
    pub appkey: String,
    pub appsecret: String,
    pub agent_id: i64,
    /// Recipients the app may address in one minute of the mock clock;
    /// past it a send answers `143103`.
    pub recipients_per_minute: u32,
    /// Messages a user gets from the app in a (Beijing) day; more are taken
    /// and dropped into `forbidden_user_id_list`. DingTalk's is 500.
    pub per_user_per_day: u32,
    /// Userids the company does not have. Ids starting with `unknown-` are
    /// unknown too, without listing.
    pub invalid_users: Vec<String>,
}

impl Default for DingtalkConfig {
    fn default() -> Self {
        DingtalkConfig {
            appkey: DEFAULT_DINGTALK_APPKEY.to_owned(),
            appsecret: DEFAULT_DINGTALK_APPSECRET.to_owned(),
            agent_id: DEFAULT_DINGTALK_AGENT_ID,
            recipients_per_minute: 100_000,
            per_user_per_day: 500,
            invalid_users: Vec::new(),
        }
    }
}

impl DingtalkConfig {
    /// Credentials no client could send are refused.
    pub fn validate(&self) -> Result<(), String> {
        if self.appkey.trim().is_empty() {
            return Err("appkey is empty".to_owned());
        }
        if self.appsecret.is_empty() {
            return Err("appsecret is empty".to_owned());
        }
        if self.agent_id <= 0 {
            return Err(format!("agent_id must be positive, got {}", self.agent_id));
        }
        Ok(())
    }
}

/// What the next calls do wrong; `GET|POST /_mock/dingtalk/faults`. A POST
/// replaces all of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DingtalkFaults {
    /// Expires the current token at once (it then answers `42001`); reads
    /// back `false`.
    pub expire_tokens: bool,
    /// The next N sends answer `143103` (the app's recipients a minute).
    pub throttle_next: u32,
    /// The next N sends answer `-1` (system busy).
    pub busy_next: u32,
    /// Delay added before every send answer.
    pub latency_ms: u64,
}

/// `GET /_mock/dingtalk/stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DingtalkStats {
    /// New tokens issued (a token handed out again is not counted).
    pub tokens_issued: u64,
    /// `gettoken` calls refused.
    pub tokens_refused: u64,
    /// `asyncsend_v2` calls, whatever their answer.
    pub calls: u64,
    /// Calls answered `0` (a task created).
    pub accepted_calls: u64,
    /// User messages delivered.
    pub delivered: u64,
    /// Distinct users delivered to.
    pub users: u64,
    /// Deliveries to a user already delivered to.
    pub repeated_users: u64,
    /// Userids of taken tasks that the company does not have.
    pub invalid_users: u64,
    /// Messages dropped: the same content to a user again the same day.
    pub dropped_same_content: u64,
    /// Messages dropped: past `per_user_per_day`.
    pub dropped_daily_cap: u64,
    /// `getsendresult` calls answered.
    pub result_queries: u64,
    /// Non-zero answers of every route, by errcode.
    pub refused: BTreeMap<String, u64>,
}

/// One delivered user message; `GET /_mock/dingtalk/messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DingtalkMessage {
    pub userid: String,
    pub task_id: u64,
    pub agent_id: i64,
    /// The `msg` object as sent.
    pub msg: Value,
    /// Mock clock (unix ms) when the task was taken.
    pub at_ms: u64,
}

#[derive(Clone)]
struct Delivered {
    userid: String,
    task_id: u64,
    agent_id: i64,
    msg: Arc<Value>,
    at_ms: u64,
}

/// What `getsendresult` tells of one task.
#[derive(Default)]
struct TaskResult {
    invalid: Vec<String>,
    forbidden: Vec<(String, i64)>,
    delivered: Vec<String>,
}

#[derive(Default)]
struct Tokens {
    /// The token `gettoken` hands out while valid, and its expiry.
    current: Option<(String, u64)>,
    /// Tokens that were current once: they answer "expired", not "unknown".
    retired: VecDeque<String>,
}

impl Tokens {
    fn retire(&mut self) {
        if let Some((t, _)) = self.current.take() {
            self.retired.push_back(t);
            if self.retired.len() > 64 {
                self.retired.pop_front();
            }
        }
    }
}

#[derive(Default)]
struct Counters {
    tokens_issued: AtomicU64,
    tokens_refused: AtomicU64,
    calls: AtomicU64,
    accepted_calls: AtomicU64,
    delivered: AtomicU64,
    invalid_users: AtomicU64,
    dropped_same_content: AtomicU64,
    dropped_daily_cap: AtomicU64,
    result_queries: AtomicU64,
}

fn bump(a: &AtomicU64, n: u64) {
    a.fetch_add(n, Ordering::Relaxed);
}

/// Per-user daily counts and the contents each user got today.
#[derive(Default)]
struct UserDays {
    /// userid -> (Beijing day, messages that day).
    counts: HashMap<String, (u64, u32)>,
    /// (day, userid, content hash) of messages delivered.
    seen: HashSet<(u64, String, u64)>,
}

/// Everything the DingTalk mock keeps.
pub(crate) struct DingtalkState {
    pub(crate) clock: Clock,
    cfg: RwLock<Arc<DingtalkConfig>>,
    faults: Mutex<DingtalkFaults>,
    tokens: Mutex<Tokens>,
    token_seq: AtomicU64,
    task_seq: AtomicU64,
    /// (minute index, recipients addressed in it).
    minute: Mutex<(u64, u64)>,
    days: Mutex<UserDays>,
    tasks: Mutex<(HashMap<u64, TaskResult>, VecDeque<u64>)>,
    ring: Ring<Delivered>,
    counters: Counters,
    refused: CodeTally,
    repeats: crate::repeats::Repeats,
}

impl DingtalkState {
    pub(crate) fn new(cfg: DingtalkConfig) -> DingtalkState {
        let salt = std::process::id() as u64;
        DingtalkState {
            clock: Clock::system(),
            cfg: RwLock::new(Arc::new(cfg)),
            faults: Mutex::new(DingtalkFaults::default()),
            tokens: Mutex::new(Tokens::default()),
            token_seq: AtomicU64::new(salt << 20),
            task_seq: AtomicU64::new(256_271_000_000),
            minute: Mutex::new((0, 0)),
            days: Mutex::new(UserDays::default()),
            tasks: Mutex::new((HashMap::new(), VecDeque::new())),
            ring: Ring::new(DINGTALK_RING_CAPACITY),
            counters: Counters::default(),
            refused: CodeTally::default(),
            repeats: Default::default(),
        }
    }

    fn cfg(&self) -> Arc<DingtalkConfig> {
        self.cfg.read().clone()
    }

    pub(crate) fn config(&self) -> DingtalkConfig {
        (*self.cfg()).clone()
    }

    pub(crate) fn set_config(&self, cfg: DingtalkConfig) -> Result<(), String> {
        cfg.validate()?;
        *self.cfg.write() = Arc::new(cfg);
        Ok(())
    }

    pub(crate) fn faults(&self) -> DingtalkFaults {
        self.faults.lock().clone()
    }

    /// Replaces the faults; `expire_tokens` acts at once.
    pub(crate) fn set_faults(&self, mut f: DingtalkFaults) {
        if f.expire_tokens {
            self.tokens.lock().retire();
            f.expire_tokens = false;
            tracing::info!("dingtalk mock: the current token expired");
        }
        *self.faults.lock() = f;
    }

    pub(crate) fn stats(&self) -> DingtalkStats {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let c = &self.counters;
        DingtalkStats {
            tokens_issued: n(&c.tokens_issued),
            tokens_refused: n(&c.tokens_refused),
            calls: n(&c.calls),
            accepted_calls: n(&c.accepted_calls),
            delivered: n(&c.delivered),
            users: self.repeats.devices(),
            repeated_users: self.repeats.repeated(),
            invalid_users: n(&c.invalid_users),
            dropped_same_content: n(&c.dropped_same_content),
            dropped_daily_cap: n(&c.dropped_daily_cap),
            result_queries: n(&c.result_queries),
            refused: self.refused.snapshot(),
        }
    }

    /// The newest `limit` delivered messages (only to `userid`, if given),
    /// oldest first.
    pub(crate) fn messages(&self, limit: usize, userid: Option<&str>) -> Vec<DingtalkMessage> {
        self.ring
            .snapshot(limit, |m| userid.is_none_or(|u| m.userid == u))
            .into_iter()
            .map(|d| DingtalkMessage {
                userid: d.userid,
                task_id: d.task_id,
                agent_id: d.agent_id,
                msg: (*d.msg).clone(),
                at_ms: d.at_ms,
            })
            .collect()
    }

    /// Forgets messages, counters, tasks and windows; keeps the
    /// configuration, faults, clock and the token.
    pub(crate) fn reset(&self) {
        self.ring.clear();
        *self.minute.lock() = (0, 0);
        *self.days.lock() = UserDays::default();
        *self.tasks.lock() = (HashMap::new(), VecDeque::new());
        let c = &self.counters;
        for a in [
            &c.tokens_issued,
            &c.tokens_refused,
            &c.calls,
            &c.accepted_calls,
            &c.delivered,
            &c.invalid_users,
            &c.dropped_same_content,
            &c.dropped_daily_cap,
            &c.result_queries,
        ] {
            a.store(0, Ordering::Relaxed);
        }
        self.refused.clear();
        self.repeats.clear();
    }

    /// The current token if it is valid (its expiry extended), else a new one.
    fn token_for_app(&self, now_ms: u64) -> String {
        let mut t = self.tokens.lock();
        let expires = now_ms + DINGTALK_TOKEN_TTL_SECS * 1000;
        if let Some((tok, exp)) = t.current.as_mut()
            && *exp > now_ms
        {
            *exp = expires;
            return tok.clone();
        }
        t.retire();
        let n = mix64(self.token_seq.fetch_add(1, Ordering::Relaxed));
        let tok = format!("{n:016x}{:016x}", mix64(n));
        t.current = Some((tok.clone(), expires));
        bump(&self.counters.tokens_issued, 1);
        tok
    }

    /// `Ok`, or the errcode a request with `token` gets.
    fn check_token(&self, token: Option<&str>, now_ms: u64) -> Result<(), i64> {
        let Some(token) = token.filter(|t| !t.is_empty()) else {
            return Err(BAD_TOKEN);
        };
        let t = self.tokens.lock();
        match &t.current {
            Some((cur, exp)) if cur == token => {
                if *exp > now_ms {
                    Ok(())
                } else {
                    Err(TOKEN_EXPIRED)
                }
            }
            _ if t.retired.iter().any(|r| r == token) => Err(TOKEN_EXPIRED),
            _ => Err(BAD_TOKEN),
        }
    }

    fn refuse(&self, code: i64, msg: &str) -> Response {
        self.refused.add(&code.to_string(), 1);
        tracing::debug!(errcode = code, errmsg = msg, "dingtalk mock: refused");
        answer(code, msg, json!({}))
    }
}

fn request_id() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(1);
    let n = mix64(SEQ.fetch_add(1, Ordering::Relaxed));
    format!("{:013x}", n & 0x1f_ffff_ffff_ffff)
}

/// HTTP 200 with `errcode`, `errmsg`, `request_id` and `extra`'s fields.
fn answer(code: i64, msg: &str, extra: Value) -> Response {
    let mut body = json!({"errcode": code, "errmsg": msg, "request_id": request_id()});
    if let (Some(b), Value::Object(e)) = (body.as_object_mut(), extra) {
        b.extend(e);
    }
    json_200(body.to_string())
}

pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .route("/gettoken", get(gettoken))
        .route(
            "/topapi/message/corpconversation/asyncsend_v2",
            post(asyncsend),
        )
        .route(
            "/topapi/message/corpconversation/getsendresult",
            post(getsendresult),
        )
        .route("/_mock/dingtalk/stats", get(stats))
        .route("/_mock/dingtalk/messages", get(messages))
        .route("/_mock/dingtalk/faults", get(get_faults).post(set_faults))
        .route("/_mock/dingtalk/config", get(get_config).post(set_config))
        .route("/_mock/dingtalk/clock", post(move_clock))
}

#[derive(Deserialize)]
struct TokenQuery {
    appkey: Option<String>,
    appsecret: Option<String>,
}

async fn gettoken(
    State(state): State<MockState>,
    q: Result<Query<TokenQuery>, QueryRejection>,
) -> Response {
    let dt = &state.shared.dingtalk;
    let cfg = dt.cfg();
    let ok = q.as_ref().is_ok_and(|Query(q)| {
        q.appkey.as_deref() == Some(cfg.appkey.as_str())
            && q.appsecret
                .as_deref()
                .is_some_and(|s| crate::sms::same(s, &cfg.appsecret))
    });
    if !ok {
        bump(&dt.counters.tokens_refused, 1);
        return dt.refuse(BAD_CREDENTIALS, "不合法的appKey或appSecret");
    }
    let token = dt.token_for_app(dt.clock.now_ms());
    answer(
        OK,
        "ok",
        json!({"access_token": token, "expires_in": DINGTALK_TOKEN_TTL_SECS}),
    )
}

#[derive(Deserialize)]
struct TokenParam {
    access_token: Option<String>,
}

/// A checked `asyncsend_v2` body.
struct SendBody {
    agent_id: i64,
    users: Vec<String>,
    msg: Value,
}

/// Reads the body as DingTalk would, or the errcode and errmsg to answer.
fn read_send(body: &[u8]) -> Result<SendBody, (i64, String)> {
    let param = |m: &str| (BAD_PARAM, m.to_owned());
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| param(&format!("不合法的参数: body is not JSON: {e}")))?;
    let agent_id = match v.get("agent_id") {
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(s)) => s.parse().ok(),
        _ => None,
    }
    .ok_or_else(|| param("不合法的参数: agent_id is required (a number)"))?;
    if v.get("dept_id_list").is_some() || v.get("to_all_user").is_some() {
        return Err(param(
            "不合法的参数: the mock models userid_list only, not dept_id_list or to_all_user",
        ));
    }
    let list = v
        .get("userid_list")
        .and_then(Value::as_str)
        .ok_or_else(|| param("不合法的参数: userid_list is required (a comma-separated string)"))?;
    let users: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_owned)
        .collect();
    if users.is_empty() {
        return Err(param("不合法的参数: userid_list is empty"));
    }
    if users.len() > DINGTALK_MAX_USERS {
        return Err(param(&format!(
            "不合法的参数: userid_list holds {} userids; at most {DINGTALK_MAX_USERS}",
            users.len()
        )));
    }
    let msg = v
        .get("msg")
        .filter(|m| m.is_object())
        .ok_or_else(|| param("不合法的参数: msg is required (an object)"))?;
    let size = msg.to_string().len();
    if size > DINGTALK_MAX_MSG_BYTES {
        return Err(param(&format!(
            "不合法的参数: msg is {size} bytes; at most {DINGTALK_MAX_MSG_BYTES}"
        )));
    }
    let ty = msg
        .get("msgtype")
        .and_then(Value::as_str)
        .filter(|t| MSGTYPES.contains(t))
        .ok_or_else(|| param("不合法的参数: msg.msgtype is missing or unknown"))?;
    let inner = msg.get(ty).and_then(Value::as_object);
    let ok = match (ty, inner) {
        (_, None) => false,
        ("text", Some(o)) => o
            .get("content")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty()),
        ("markdown", Some(o)) => ["title", "text"].iter().all(|k| {
            o.get(*k)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
        }),
        ("action_card", Some(o)) => o.get("markdown").and_then(Value::as_str).is_some(),
        _ => true,
    };
    if !ok {
        return Err(param(&format!(
            "不合法的参数: msg.{ty} is missing or lacks its required fields"
        )));
    }
    Ok(SendBody {
        agent_id,
        users,
        msg: msg.clone(),
    })
}

async fn asyncsend(
    State(state): State<MockState>,
    q: Result<Query<TokenParam>, QueryRejection>,
    body: Bytes,
) -> Response {
    let dt = &state.shared.dingtalk;
    bump(&dt.counters.calls, 1);
    let latency_ms = dt.faults.lock().latency_ms;
    if latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(latency_ms)).await;
    }
    let now_ms = dt.clock.now_ms();
    let token = q.ok().and_then(|Query(p)| p.access_token);
    if let Err(code) = dt.check_token(token.as_deref(), now_ms) {
        let msg = if code == TOKEN_EXPIRED {
            "access_token超时"
        } else {
            "不合法的access_token"
        };
        return dt.refuse(code, msg);
    }
    let cfg = dt.cfg();
    let send = match read_send(&body) {
        Ok(s) => s,
        Err((code, msg)) => return dt.refuse(code, &msg),
    };
    if send.agent_id != cfg.agent_id {
        return dt.refuse(BAD_AGENT, "不合法的agentId");
    }
    {
        let mut f = dt.faults.lock();
        if f.busy_next > 0 {
            f.busy_next -= 1;
            drop(f);
            return dt.refuse(BUSY, "系统繁忙");
        }
        if f.throttle_next > 0 {
            f.throttle_next -= 1;
            drop(f);
            return dt.refuse(APP_QPM, "发送消息的接收人数超过应用每分钟上限");
        }
    }
    if cfg.recipients_per_minute > 0 {
        let mut m = dt.minute.lock();
        let index = now_ms / MINUTE_MS;
        if m.0 != index {
            *m = (index, 0);
        }
        if m.1 + send.users.len() as u64 > u64::from(cfg.recipients_per_minute) {
            drop(m);
            return dt.refuse(APP_QPM, "发送消息的接收人数超过应用每分钟上限");
        }
        m.1 += send.users.len() as u64;
    }

    let task_id = dt.task_seq.fetch_add(1, Ordering::Relaxed);
    let msg = Arc::new(send.msg);
    let content = xxhash_rust::xxh3::xxh3_64(msg.to_string().as_bytes());
    let day = beijing_day(now_ms);
    let invalid: HashSet<&str> = cfg.invalid_users.iter().map(String::as_str).collect();
    let mut result = TaskResult::default();
    {
        let mut days = dt.days.lock();
        let mut in_task = HashSet::new();
        for u in send.users {
            if !in_task.insert(u.clone()) {
                continue;
            }
            if u.starts_with("unknown-") || invalid.contains(u.as_str()) {
                result.invalid.push(u);
                continue;
            }
            if days.seen.contains(&(day, u.clone(), content)) {
                bump(&dt.counters.dropped_same_content, 1);
                result.forbidden.push((u, 143105));
                continue;
            }
            let count = days.counts.entry(u.clone()).or_insert((day, 0));
            if count.0 != day {
                *count = (day, 0);
            }
            if cfg.per_user_per_day > 0 && count.1 >= cfg.per_user_per_day {
                bump(&dt.counters.dropped_daily_cap, 1);
                result.forbidden.push((u, 143106));
                continue;
            }
            count.1 += 1;
            days.seen.insert((day, u.clone(), content));
            result.delivered.push(u);
        }
        // Yesterday's contents no longer count.
        days.seen.retain(|(d, _, _)| *d == day);
    }
    bump(&dt.counters.accepted_calls, 1);
    bump(&dt.counters.invalid_users, result.invalid.len() as u64);
    bump(&dt.counters.delivered, result.delivered.len() as u64);
    for u in &result.delivered {
        dt.repeats.record(u);
        dt.ring.push(Delivered {
            userid: u.clone(),
            task_id,
            agent_id: send.agent_id,
            msg: msg.clone(),
            at_ms: now_ms,
        });
    }
    tracing::debug!(
        task_id,
        delivered = result.delivered.len(),
        invalid = result.invalid.len(),
        forbidden = result.forbidden.len(),
        "dingtalk mock: task taken"
    );
    {
        let mut t = dt.tasks.lock();
        t.0.insert(task_id, result);
        t.1.push_back(task_id);
        while t.1.len() > TASK_MEMORY {
            if let Some(old) = t.1.pop_front() {
                t.0.remove(&old);
            }
        }
    }
    answer(OK, "ok", json!({"task_id": task_id}))
}

async fn getsendresult(
    State(state): State<MockState>,
    q: Result<Query<TokenParam>, QueryRejection>,
    body: Bytes,
) -> Response {
    let dt = &state.shared.dingtalk;
    let token = q.ok().and_then(|Query(p)| p.access_token);
    if let Err(code) = dt.check_token(token.as_deref(), dt.clock.now_ms()) {
        return dt.refuse(code, "不合法的access_token");
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let agent_id = v.get("agent_id").and_then(Value::as_i64);
    let task_id = v.get("task_id").and_then(|t| match t {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    });
    let (Some(agent_id), Some(task_id)) = (agent_id, task_id) else {
        return dt.refuse(BAD_PARAM, "不合法的参数: agent_id and task_id are required");
    };
    if agent_id != dt.cfg().agent_id {
        return dt.refuse(BAD_AGENT, "不合法的agentId");
    }
    let tasks = dt.tasks.lock();
    let Some(r) = tasks.0.get(&task_id) else {
        drop(tasks);
        return dt.refuse(BAD_PARAM, "不合法的参数: no such task_id");
    };
    bump(&dt.counters.result_queries, 1);
    let forbidden: Vec<&str> = r.forbidden.iter().map(|(u, _)| u.as_str()).collect();
    let forbidden_list: Vec<Value> = r
        .forbidden
        .iter()
        .map(|(u, code)| json!({"code": code.to_string(), "count": 1, "userid": u}))
        .collect();
    answer(
        OK,
        "ok",
        json!({"send_result": {
            "invalid_user_id_list": r.invalid,
            "forbidden_user_id_list": forbidden,
            "failed_user_id_list": [],
            "read_user_id_list": [],
            "unread_user_id_list": r.delivered,
            "invalid_dept_id_list": [],
            "forbidden_list": forbidden_list,
        }}),
    )
}

async fn stats(State(state): State<MockState>) -> Response {
    Json(state.shared.dingtalk.stats()).into_response()
}

#[derive(Deserialize)]
struct Listing {
    limit: Option<usize>,
    userid: Option<String>,
}

async fn messages(
    State(state): State<MockState>,
    q: Result<Query<Listing>, QueryRejection>,
) -> Response {
    match q {
        Ok(Query(q)) => Json(state.shared.dingtalk.messages(
            q.limit.unwrap_or(DINGTALK_RING_CAPACITY),
            q.userid.as_deref(),
        ))
        .into_response(),
        Err(e) => bad_request(format!("dingtalk messages: {e}")),
    }
}

async fn get_faults(State(state): State<MockState>) -> Response {
    Json(state.shared.dingtalk.faults()).into_response()
}

async fn set_faults(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<DingtalkFaults>(&body) {
        Ok(f) => {
            state.shared.dingtalk.set_faults(f);
            Json(state.shared.dingtalk.faults()).into_response()
        }
        Err(e) => bad_request(format!("dingtalk faults: {e}")),
    }
}

async fn get_config(State(state): State<MockState>) -> Response {
    Json(state.shared.dingtalk.config()).into_response()
}

async fn set_config(State(state): State<MockState>, body: Bytes) -> Response {
    let cfg = match serde_json::from_slice::<DingtalkConfig>(&body) {
        Ok(c) => c,
        Err(e) => return bad_request(format!("dingtalk config: {e}")),
    };
    match state.shared.dingtalk.set_config(cfg) {
        Ok(()) => Json(state.shared.dingtalk.config()).into_response(),
        Err(e) => bad_request(format!("dingtalk config: {e}")),
    }
}

async fn move_clock(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<ClockMove>(&body) {
        Ok(m) => {
            let c = &state.shared.dingtalk.clock;
            c.advance(
                m.advance_secs
                    .saturating_mul(1000)
                    .saturating_add(m.advance_ms),
            );
            Json(json!({ "now_ms": c.now_ms(), "offset_ms": c.offset_ms() })).into_response()
        }
        Err(e) => bad_request(format!("dingtalk clock: {e}")),
    }
}
