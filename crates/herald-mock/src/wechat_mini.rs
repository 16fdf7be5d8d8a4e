//! WeChat mini-program subscribe messages (`/cgi-bin/message/subscribe/send`),
//! on the WeChat mock's access tokens (one app, one token store).
//!
//! What makes it worth testing against: WeChat keeps a count of one-time
//! grants per (openid, template) that nobody outside can read, spends one per
//! accepted send, and answers `43101` when none is left. The mock keeps the
//! same ledger; a test plays the user's "Allow" tap through
//! `POST /_mock/wechat_mini/grants`. Values are checked against their keyword
//! type (`thing` at most 20 characters, `number` digits, `time` a clock
//! time ...) and refused with `47003` naming the field, as WeChat does.
//!
//! This check is written apart from the channel's own (`herald-channels`'s
//! `subscribe_rules`), so a rule the channel gets wrong shows up as a
//! refusal here rather than agreeing with itself.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::MockState;
use crate::providers::{self, Ring};
use crate::wechat::{AccessTokenQuery, WxError, with_latency};

/// How many accepted subscribe messages `GET /_mock/wechat_mini/messages` can show.
pub const WECHAT_MINI_RING_CAPACITY: usize = 200_000;

const NO_GRANT: WxError = WxError::new(43101, "user refuse to accept the msg");
const BAD_PAGE: WxError = WxError::new(41030, "invalid page");

/// Misbehaviour to inject; `POST /_mock/wechat_mini/faults` replaces all of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WechatMiniFaults {
    /// The next N sends answer `-1` (system busy).
    pub system_busy_next: u32,
    /// Openids answered 40003.
    pub invalid_openids: Vec<String>,
    /// Pages the live version does not have (41030).
    pub missing_pages: Vec<String>,
}

/// One grant the user gave, as the test plays it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockGrant {
    pub openid: String,
    pub template_id: String,
    /// One-time grants to add (each tap on "Allow" is one).
    #[serde(default)]
    pub count: u64,
    /// A long-term subscription: every send goes.
    #[serde(default)]
    pub long_term: bool,
}

/// Counters; `GET /_mock/wechat_mini/stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WechatMiniStats {
    pub received: u64,
    pub delivered: u64,
    /// Sends refused with 43101.
    pub no_grant: u64,
    /// Sends refused with 47003 (a value broke its keyword rule).
    pub bad_value: u64,
    /// Every errcode answered, by code.
    pub errors: std::collections::BTreeMap<String, u64>,
}

/// One accepted subscribe message; `GET /_mock/wechat_mini/messages`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WechatMiniMessage {
    pub touser: String,
    pub template_id: String,
    pub page: Option<String>,
    pub miniprogram_state: Option<String>,
    pub lang: Option<String>,
    pub data: Value,
    pub at_ms: u64,
}

#[derive(Default, Clone, Copy)]
struct Held {
    one_time: u64,
    long_term: bool,
}

pub(crate) struct WechatMiniState {
    grants: Mutex<HashMap<(String, String), Held>>,
    faults: RwLock<(WechatMiniFaults, HashSet<String>, HashSet<String>)>,
    system_busy_next: AtomicU32,
    received: AtomicU64,
    delivered: AtomicU64,
    no_grant: AtomicU64,
    bad_value: AtomicU64,
    errors: providers::ErrorTally,
    ring: Ring<WechatMiniMessage>,
}

impl WechatMiniState {
    pub(crate) fn new() -> Self {
        Self {
            grants: Mutex::new(HashMap::new()),
            faults: RwLock::new(Default::default()),
            system_busy_next: AtomicU32::new(0),
            received: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            no_grant: AtomicU64::new(0),
            bad_value: AtomicU64::new(0),
            errors: providers::ErrorTally::default(),
            ring: Ring::new(WECHAT_MINI_RING_CAPACITY),
        }
    }

    pub(crate) fn reset(&self) {
        self.grants.lock().clear();
        for c in [
            &self.received,
            &self.delivered,
            &self.no_grant,
            &self.bad_value,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        self.errors.clear();
        self.ring.clear();
    }

    pub(crate) fn stats(&self) -> WechatMiniStats {
        WechatMiniStats {
            received: self.received.load(Ordering::Relaxed),
            delivered: self.delivered.load(Ordering::Relaxed),
            no_grant: self.no_grant.load(Ordering::Relaxed),
            bad_value: self.bad_value.load(Ordering::Relaxed),
            errors: self.errors.snapshot(),
        }
    }

    fn add_grants(&self, grants: Vec<MockGrant>) {
        let mut held = self.grants.lock();
        for g in grants {
            let h = held.entry((g.openid, g.template_id)).or_default();
            h.one_time = h.one_time.saturating_add(g.count);
            h.long_term |= g.long_term;
        }
    }

    fn grants_of(&self, openid: &str) -> Vec<MockGrant> {
        let mut out: Vec<MockGrant> = self
            .grants
            .lock()
            .iter()
            .filter(|((o, _), _)| o == openid)
            .map(|((o, t), h)| MockGrant {
                openid: o.clone(),
                template_id: t.clone(),
                count: h.one_time,
                long_term: h.long_term,
            })
            .collect();
        out.sort_by(|a, b| a.template_id.cmp(&b.template_id));
        out
    }

    /// The send, minus HTTP and the token check.
    fn send(&self, body: &Bytes, now_ms: u64) -> Result<(), WxError> {
        if self
            .system_busy_next
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(WxError::SYSTEM_BUSY);
        }
        let msg: SubscribeMsg = serde_json::from_slice(body).map_err(WxError::data_format)?;
        let touser = msg
            .touser
            .filter(|t| !t.is_empty())
            .ok_or(WxError::INVALID_OPENID)?;
        let template_id = msg
            .template_id
            .filter(|t| !t.is_empty())
            .ok_or(WxError::INVALID_TEMPLATE)?;
        let Some(Value::Object(data)) = &msg.data else {
            return Err(WxError::data_format("data missing or not an object"));
        };
        for (key, v) in data {
            let value = v.get("value").and_then(Value::as_str).unwrap_or_default();
            if let Err(why) = keyword_ok(key.as_str(), value) {
                self.bad_value.fetch_add(1, Ordering::Relaxed);
                return Err(WxError::owned(
                    47003,
                    format!("argument invalid! data.{key}.value {why}"),
                ));
            }
        }
        if let Some(s) = &msg.miniprogram_state
            && !["formal", "trial", "developer"].contains(&s.as_str())
        {
            return Err(WxError::owned(
                47003,
                "argument invalid! miniprogram_state".into(),
            ));
        }
        {
            let f = self.faults.read();
            if f.1.contains(&touser) {
                return Err(WxError::INVALID_OPENID);
            }
            if msg.page.as_ref().is_some_and(|p| {
                let path = p.split('?').next().unwrap_or_default();
                f.2.contains(path)
            }) {
                return Err(BAD_PAGE);
            }
        }
        {
            let mut held = self.grants.lock();
            let h = held
                .entry((touser.clone(), template_id.clone()))
                .or_default();
            if !h.long_term {
                if h.one_time == 0 {
                    self.no_grant.fetch_add(1, Ordering::Relaxed);
                    return Err(NO_GRANT);
                }
                h.one_time -= 1;
            }
        }
        self.delivered.fetch_add(1, Ordering::Relaxed);
        self.ring.push(WechatMiniMessage {
            touser,
            template_id,
            page: msg.page,
            miniprogram_state: msg.miniprogram_state,
            lang: msg.lang,
            data: Value::Object(data.clone()),
            at_ms: now_ms,
        });
        Ok(())
    }
}

#[derive(Deserialize)]
struct SubscribeMsg {
    touser: Option<String>,
    template_id: Option<String>,
    page: Option<String>,
    miniprogram_state: Option<String>,
    lang: Option<String>,
    data: Option<Value>,
}

/// The keyword rules WeChat documents, checked the simple way: lengths in
/// characters and the characters each type allows.
fn keyword_ok(key: &str, value: &str) -> Result<(), &'static str> {
    let kind = key.trim_end_matches(|c: char| c.is_ascii_digit());
    let n = value.chars().count();
    let cjk = |c: char| ('\u{3400}'..='\u{9FFF}').contains(&c);
    let digits_dot = |s: &str| {
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_digit() || c == '.')
            && s.chars().filter(|&c| c == '.').count() <= 1
            && !s.starts_with('.')
            && !s.ends_with('.')
    };
    let has_clock = |s: &str| {
        s.split(|c: char| !(c.is_ascii_digit() || c == ':'))
            .any(|w| {
                let p: Vec<&str> = w.split(':').collect();
                (p.len() == 2 || p.len() == 3)
                    && p.iter().all(|x| !x.is_empty() && x.len() <= 2)
                    && p[0].parse::<u8>().is_ok_and(|h| h < 24)
                    && p[1].parse::<u8>().is_ok_and(|m| m < 60)
            })
    };
    let has_date = |s: &str| {
        s.contains('年') && s.contains('月') && s.contains('日')
            || s.split_whitespace().any(|w| {
                let p: Vec<&str> = w.split(['-', '/']).collect();
                p.len() == 3
                    && p[0].len() == 4
                    && p[1].parse::<u8>().is_ok_and(|m| (1..=12).contains(&m))
                    && p[2].parse::<u8>().is_ok_and(|d| (1..=31).contains(&d))
            })
    };
    if value.is_empty() {
        return Err("is empty");
    }
    let ok = match kind {
        "thing" => n <= 20,
        "number" => n <= 32 && digits_dot(value),
        "letter" => n <= 32 && value.chars().all(|c| c.is_ascii_alphabetic()),
        "symbol" => n <= 5 && value.chars().all(|c| c.is_ascii_punctuation()),
        "character_string" => n <= 32 && value.chars().all(|c| c.is_ascii_graphic()),
        "time" => value.split('~').all(has_clock),
        "date" => value.split('~').all(has_date),
        "amount" => {
            let v = value.trim_end_matches('元');
            let v = v.trim_start_matches(['¥', '￥', '$', '€', '£']);
            digits_dot(v) && v.chars().filter(char::is_ascii_digit).count() <= 10
        }
        "phone_number" => {
            n <= 17
                && value
                    .chars()
                    .all(|c| c.is_ascii_digit() || "+-()".contains(c))
        }
        "car_number" => n <= 8,
        "name" => {
            if value.chars().any(cjk) {
                n <= 10
            } else {
                n <= 20
            }
        }
        "phrase" => n <= 5 && value.chars().all(cjk),
        _ => return Err("is not a keyword of the template"),
    };
    if ok {
        Ok(())
    } else {
        Err("breaks the keyword's rule")
    }
}

pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .route("/cgi-bin/message/subscribe/send", post(subscribe_send))
        .route(
            "/_mock/wechat_mini/grants",
            get(get_grants).post(add_grants),
        )
        .route(
            "/_mock/wechat_mini/faults",
            get(get_faults).post(set_faults),
        )
        .route("/_mock/wechat_mini/stats", get(stats))
        .route("/_mock/wechat_mini/messages", get(messages))
}

async fn subscribe_send(
    State(state): State<MockState>,
    q: Result<Query<AccessTokenQuery>, QueryRejection>,
    body: Bytes,
) -> Response {
    let wx = &state.shared.wechat;
    let mini = &state.shared.wechat_mini;
    let now = wx.clock.now_ms();
    mini.received.fetch_add(1, Ordering::Relaxed);
    let token = q
        .as_ref()
        .ok()
        .and_then(|Query(q)| q.access_token.as_deref());
    let resp = match wx
        .check_token(token, now)
        .and_then(|()| mini.send(&body, now))
    {
        Ok(()) => providers::json_200(r#"{"errcode":0,"errmsg":"ok"}"#.to_string()),
        Err(e) => {
            mini.errors.add(e.code());
            wx.fail(&e, now)
        }
    };
    with_latency(&state, resp).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrantsBody {
    grants: Vec<MockGrant>,
}

async fn add_grants(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<GrantsBody>(&body) {
        Ok(b) => {
            let n = b.grants.len();
            state.shared.wechat_mini.add_grants(b.grants);
            Json(serde_json::json!({ "added": n })).into_response()
        }
        Err(e) => crate::wechat::bad_request(format!("grants: {e}")),
    }
}

#[derive(Deserialize)]
struct OpenidQuery {
    openid: String,
}

async fn get_grants(State(state): State<MockState>, Query(q): Query<OpenidQuery>) -> Response {
    Json(state.shared.wechat_mini.grants_of(&q.openid)).into_response()
}

async fn get_faults(State(state): State<MockState>) -> Response {
    let f = state.shared.wechat_mini.faults.read().0.clone();
    Json(f).into_response()
}

async fn set_faults(State(state): State<MockState>, body: Bytes) -> Response {
    match serde_json::from_slice::<WechatMiniFaults>(&body) {
        Ok(f) => {
            let mini = &state.shared.wechat_mini;
            mini.system_busy_next
                .store(f.system_busy_next, Ordering::Relaxed);
            let invalid = f.invalid_openids.iter().cloned().collect();
            let pages = f.missing_pages.iter().cloned().collect();
            *mini.faults.write() = (f.clone(), invalid, pages);
            Json(f).into_response()
        }
        Err(e) => crate::wechat::bad_request(format!("faults: {e}")),
    }
}

async fn stats(State(state): State<MockState>) -> Response {
    Json(state.shared.wechat_mini.stats()).into_response()
}

#[derive(Deserialize)]
struct MessagesQuery {
    limit: Option<usize>,
    touser: Option<String>,
}

async fn messages(State(state): State<MockState>, Query(q): Query<MessagesQuery>) -> Response {
    let limit = q.limit.unwrap_or(WECHAT_MINI_RING_CAPACITY);
    let touser = q.touser.as_deref();
    Json(
        state
            .shared
            .wechat_mini
            .ring
            .snapshot(limit, |m| touser.is_none_or(|t| m.touser == t)),
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(touser: &str, value: &str) -> Bytes {
        Bytes::from(
            serde_json::json!({"touser": touser, "template_id": "T1",
                               "data": {"thing1": {"value": value}, "time2": {"value": "10:00"}}})
            .to_string(),
        )
    }

    #[test]
    fn one_grant_one_send_then_43101() {
        let s = WechatMiniState::new();
        assert_eq!(s.send(&body("o1", "券"), 0).unwrap_err().code(), 43101);
        s.add_grants(vec![MockGrant {
            openid: "o1".into(),
            template_id: "T1".into(),
            count: 2,
            long_term: false,
        }]);
        assert!(s.send(&body("o1", "券"), 0).is_ok());
        assert!(s.send(&body("o1", "券"), 0).is_ok());
        assert_eq!(s.send(&body("o1", "券"), 0).unwrap_err().code(), 43101);
        assert_eq!(s.stats().delivered, 2);
    }

    #[test]
    fn a_value_over_its_rule_is_47003_and_spends_nothing() {
        let s = WechatMiniState::new();
        s.add_grants(vec![MockGrant {
            openid: "o1".into(),
            template_id: "T1".into(),
            count: 1,
            long_term: false,
        }]);
        let e = s.send(&body("o1", &"长".repeat(21)), 0).unwrap_err();
        assert_eq!(e.code(), 47003);
        assert!(s.send(&body("o1", "ok"), 0).is_ok());
    }
}
