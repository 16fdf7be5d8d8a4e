//! Chat "group robot" webhooks: the WeCom group robot
//! (`POST /cgi-bin/webhook/send?key=`), the DingTalk custom robot
//! (`POST /robot/send?access_token=`) and the Feishu custom bot
//! (`POST /open-apis/bot/v2/hook/{token}`), as described in
//! `shared/reference/china-providers.md` §5.2, §6.4 and §7.
//!
//! Why they share one module: the three are the same product (a URL holding a
//! secret token that posts into one group chat), and the behaviours a sender
//! must survive are the same kind: an unknown token, a signature over a
//! timestamp (DingTalk and Feishu, each its own way round), a keyword the
//! text must contain, per-robot rate limits (DingTalk also throttles the
//! robot for 10 minutes once it is exceeded) and shape rules per message
//! type. All three answer errors in the body with HTTP 200, so the mocks do
//! too; only injected transport faults answer another status.
//!
//! The robots and limits come from [`RobotsConfig`] and can be replaced at
//! run time (`POST /_mock/robots/config`). One clock, movable through
//! `POST /_mock/robots/clock`, drives the rate windows, the throttle and the
//! timestamp checks. Accepted messages go to a fixed-size ring, so memory
//! stays bounded; the windows hold at most a limit's worth of send times per
//! configured robot.

mod config;
mod control;
mod dingtalk;
mod feishu;
mod wecom;

#[cfg(test)]
mod tests;

pub use config::{
    DEFAULT_DINGTALK_ROBOT_SECRET, DEFAULT_DINGTALK_ROBOT_TOKEN, DEFAULT_FEISHU_BOT_SECRET,
    DEFAULT_FEISHU_BOT_TOKEN, DEFAULT_WECOM_ROBOT_KEY, ROBOTS_RING_CAPACITY, RobotConfig,
    RobotFaultSet, RobotFaults, RobotLimits, RobotMessage, RobotProvider, RobotProviderStats,
    RobotStats, RobotsConfig,
};

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use parking_lot::{Mutex, RwLock};
use serde_json::{Map, Value};

use crate::MockState;
use crate::providers::{Clock, ErrorTally, MINUTE_MS, Ring};

/// An error answer, before the provider shapes it.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    code: i64,
    msg: Cow<'static, str>,
}

impl Refusal {
    const fn new(code: i64, msg: &'static str) -> Refusal {
        Refusal {
            code,
            msg: Cow::Borrowed(msg),
        }
    }

    fn owned(code: i64, msg: String) -> Refusal {
        Refusal {
            code,
            msg: Cow::Owned(msg),
        }
    }
}

/// The configuration plus a lookup by provider and token.
struct Live {
    cfg: RobotsConfig,
    by_token: HashMap<(RobotProvider, String), RobotConfig>,
}

impl Live {
    fn new(cfg: RobotsConfig) -> Live {
        let by_token = cfg
            .robots
            .iter()
            .map(|r| ((r.provider, r.token.clone()), r.clone()))
            .collect();
        Live { cfg, by_token }
    }
}

/// Accepted send times of one robot, newest last, and when its throttle ends.
#[derive(Default)]
struct Window {
    times: VecDeque<u64>,
    throttled_until_ms: u64,
}

/// At most `max` in any rolling `window_ms`; `max` 0 is off.
#[derive(Clone, Copy)]
struct Limit {
    max: u32,
    window_ms: u64,
}

#[derive(Default)]
struct Tally {
    calls: AtomicU64,
    accepted: AtomicU64,
    refused: ErrorTally,
    http_errors: ErrorTally,
}

impl Tally {
    fn snapshot(&self) -> RobotProviderStats {
        RobotProviderStats {
            calls: self.calls.load(Ordering::Relaxed),
            accepted: self.accepted.load(Ordering::Relaxed),
            refused: self.refused.snapshot(),
            http_errors: self.http_errors.snapshot(),
        }
    }

    fn clear(&self) {
        self.calls.store(0, Ordering::Relaxed);
        self.accepted.store(0, Ordering::Relaxed);
        self.refused.clear();
        self.http_errors.clear();
    }
}

enum Fault {
    Code(Refusal),
    Http(StatusCode),
}

/// Everything the robot mocks keep.
pub(crate) struct RobotsState {
    pub(crate) clock: Clock,
    live: RwLock<Arc<Live>>,
    windows: Mutex<HashMap<(RobotProvider, String), Window>>,
    faults: Mutex<RobotFaultSet>,
    tallies: [Tally; 3],
    ring: Ring<RobotMessage>,
    /// Feeds the WeCom `hint: [...]` ids.
    hints: AtomicU64,
}

impl RobotsState {
    /// `cfg` should have passed [`RobotsConfig::validate`].
    pub(crate) fn new(cfg: RobotsConfig) -> RobotsState {
        RobotsState {
            clock: Clock::system(),
            live: RwLock::new(Arc::new(Live::new(cfg))),
            windows: Mutex::new(HashMap::new()),
            faults: Mutex::new(RobotFaultSet::default()),
            tallies: Default::default(),
            ring: Ring::new(ROBOTS_RING_CAPACITY),
            hints: AtomicU64::new(0),
        }
    }

    pub(crate) fn config(&self) -> RobotsConfig {
        self.live.read().cfg.clone()
    }

    /// Replaces the robots and limits. Windows and throttles of robots that
    /// stay are kept.
    pub(crate) fn set_config(&self, cfg: RobotsConfig) -> Result<(), String> {
        cfg.validate()?;
        *self.live.write() = Arc::new(Live::new(cfg));
        Ok(())
    }

    pub(crate) fn faults(&self) -> RobotFaultSet {
        self.faults.lock().clone()
    }

    /// Replaces the faults of `provider`, or of every provider.
    pub(crate) fn set_faults(
        &self,
        provider: Option<RobotProvider>,
        f: RobotFaults,
    ) -> Result<(), String> {
        f.validate()?;
        let mut set = self.faults.lock();
        for p in RobotProvider::ALL {
            if provider.is_none_or(|only| only == p) {
                *set.of_mut(p) = f.clone();
            }
        }
        Ok(())
    }

    pub(crate) fn stats(&self) -> RobotStats {
        RobotStats {
            wecom: self.tallies[RobotProvider::Wecom.index()].snapshot(),
            dingtalk: self.tallies[RobotProvider::Dingtalk.index()].snapshot(),
            feishu: self.tallies[RobotProvider::Feishu.index()].snapshot(),
        }
    }

    pub(crate) fn messages(
        &self,
        limit: usize,
        provider: Option<RobotProvider>,
        token: Option<&str>,
    ) -> Vec<RobotMessage> {
        self.ring.snapshot(limit, |m| {
            provider.is_none_or(|p| p == m.provider) && token.is_none_or(|t| t == m.token)
        })
    }

    /// Forgets accepted messages, counters, rate windows and throttles.
    /// Robots, limits, faults and the clock are kept.
    pub(crate) fn reset(&self) {
        self.ring.clear();
        self.windows.lock().clear();
        for t in &self.tallies {
            t.clear();
        }
    }

    /// The robot `token` of `p`, if configured.
    fn robot(&self, p: RobotProvider, token: &str) -> Option<RobotConfig> {
        self.live
            .read()
            .by_token
            .get(&(p, token.to_owned()))
            .cloned()
    }

    fn limits(&self) -> RobotLimits {
        self.live.read().cfg.limits.clone()
    }

    /// Takes one due fault of `p`, and its latency.
    fn take_fault(&self, p: RobotProvider) -> (Option<Fault>, u64) {
        let mut set = self.faults.lock();
        let f = set.of_mut(p);
        let latency = f.latency_ms;
        if f.fail_next > 0 {
            f.fail_next -= 1;
            let code = f.code.unwrap_or_else(|| p.rate_code());
            let msg = match &f.msg {
                Some(m) => Cow::Owned(m.clone()),
                None => Cow::Borrowed(known_msg(p, code)),
            };
            return (Some(Fault::Code(Refusal { code, msg })), latency);
        }
        if f.http_status_next > 0 {
            f.http_status_next -= 1;
            let status = StatusCode::from_u16(f.status).unwrap_or(StatusCode::BAD_GATEWAY);
            return (Some(Fault::Http(status)), latency);
        }
        (None, latency)
    }

    /// Whether `token` of `p` may have one more message now. With `record`,
    /// a yes also counts it. A DingTalk robot that goes over its limit is
    /// throttled, and answers no to everything until the throttle ends.
    ///
    /// Senders call it twice: once before reading the message, so that a
    /// throttled robot answers its rate code whatever it is sent, and once
    /// with `record` when the message passed, under the same lock as the
    /// count so that concurrent sends cannot overshoot the limit.
    fn gate(&self, p: RobotProvider, token: &str, now_ms: u64, record: bool) -> bool {
        let l = self.limits();
        let minute = |max| Limit {
            max,
            window_ms: MINUTE_MS,
        };
        let off = Limit {
            max: 0,
            window_ms: 0,
        };
        let (limits, throttle_ms) = match p {
            RobotProvider::Wecom => ([minute(l.wecom_per_minute), off], 0),
            RobotProvider::Dingtalk => (
                [minute(l.dingtalk_per_minute), off],
                l.dingtalk_throttle_secs.saturating_mul(1000),
            ),
            RobotProvider::Feishu => (
                [
                    minute(l.feishu_per_minute),
                    Limit {
                        max: l.feishu_per_second,
                        window_ms: 1000,
                    },
                ],
                0,
            ),
        };
        let active = || limits.iter().filter(|l| l.max > 0);
        let span = active().map(|l| l.window_ms).max().unwrap_or(0);
        let keep = active().map(|l| l.max as usize).max().unwrap_or(0);
        let mut windows = self.windows.lock();
        let w = windows.entry((p, token.to_owned())).or_default();
        if now_ms < w.throttled_until_ms {
            return false;
        }
        while w
            .times
            .front()
            .is_some_and(|t| now_ms.saturating_sub(*t) >= span)
        {
            w.times.pop_front();
        }
        for lim in active() {
            let used = w
                .times
                .iter()
                .rev()
                .take_while(|t| now_ms.saturating_sub(**t) < lim.window_ms)
                .count();
            if used >= lim.max as usize {
                if throttle_ms > 0 {
                    w.throttled_until_ms = now_ms.saturating_add(throttle_ms);
                    tracing::debug!(token, throttle_ms, "dingtalk robot mock: throttled");
                }
                return false;
            }
        }
        if record && keep > 0 {
            w.times.push_back(now_ms);
            while w.times.len() > keep {
                w.times.pop_front();
            }
        }
        true
    }

    /// Records an accepted message.
    fn accept(&self, p: RobotProvider, token: &str, msgtype: &str, body: Value, now_ms: u64) {
        self.tallies[p.index()]
            .accepted
            .fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            provider = p.as_str(),
            token,
            msgtype,
            "robot mock: accepted"
        );
        self.ring.push(RobotMessage {
            provider: p,
            token: token.to_owned(),
            msgtype: msgtype.to_owned(),
            body,
            at_ms: now_ms,
        });
    }

    /// Runs one send of `p`: counts it, applies a due fault or else `send`,
    /// and shapes the answer as the provider does.
    async fn answer(
        &self,
        p: RobotProvider,
        send: impl FnOnce(&RobotsState, u64) -> Result<(), Refusal>,
    ) -> Response {
        let tally = &self.tallies[p.index()];
        tally.calls.fetch_add(1, Ordering::Relaxed);
        let (fault, latency_ms) = self.take_fault(p);
        let now_ms = self.clock.now_ms();
        let resp = match fault {
            Some(Fault::Http(status)) => {
                tally.http_errors.add(i64::from(status.as_u16()));
                gateway_page(status)
            }
            Some(Fault::Code(r)) => self.refuse(p, &r, now_ms),
            None => match send(self, now_ms) {
                Ok(()) => json_200(
                    match p {
                        RobotProvider::Wecom => wecom::OK_BODY,
                        RobotProvider::Dingtalk => dingtalk::OK_BODY,
                        RobotProvider::Feishu => feishu::OK_BODY,
                    }
                    .to_owned(),
                ),
                Err(r) => self.refuse(p, &r, now_ms),
            },
        };
        if latency_ms > 0 {
            tokio::time::sleep(Duration::from_millis(latency_ms)).await;
        }
        resp
    }

    fn refuse(&self, p: RobotProvider, r: &Refusal, now_ms: u64) -> Response {
        self.tallies[p.index()].refused.add(r.code);
        tracing::debug!(provider = p.as_str(), code = r.code, msg = %r.msg, "robot mock: refused");
        json_200(match p {
            RobotProvider::Wecom => wecom::error_body(r, &self.next_hint(now_ms)),
            RobotProvider::Dingtalk => dingtalk::error_body(r),
            RobotProvider::Feishu => feishu::error_body(r),
        })
    }

    fn next_hint(&self, now_ms: u64) -> String {
        let n = self.hints.fetch_add(1, Ordering::Relaxed);
        format!(
            "{}_{:08x}",
            now_ms / 1000,
            crate::providers::mix64(n) as u32
        )
    }
}

/// The text the real API gives for a code the mock knows.
fn known_msg(p: RobotProvider, code: i64) -> &'static str {
    match p {
        RobotProvider::Wecom => wecom::known_msg(code),
        RobotProvider::Dingtalk => dingtalk::known_msg(code),
        RobotProvider::Feishu => feishu::known_msg(code),
    }
}

fn json_200(body: String) -> Response {
    let mut resp = Response::new(Body::from(body));
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    resp
}

/// What a reverse proxy answers when the service behind it fails: HTML, not
/// the provider's JSON, so a sender must not expect a body it can parse.
fn gateway_page(status: StatusCode) -> Response {
    let line = format!(
        "{} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("Error")
    );
    let mut resp = Response::new(Body::from(format!(
        "<html><head><title>{line}</title></head><body><center><h1>{line}</h1></center></body></html>\n"
    )));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/html"));
    resp
}

/// Base64 of HMAC-SHA256, the signature both DingTalk and Feishu use.
fn hmac_b64(key: &[u8], msg: &[u8]) -> String {
    B64.encode(crate::sms::hmac_sha256(key, msg))
}

/// Why a field is refused, for messages naming it.
type Why = &'static str;

/// `obj[key]` as a non-empty string.
fn req_str<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<&'a str, Why> {
    match obj.get(key) {
        None | Some(Value::Null) => Err("is required"),
        Some(Value::String(s)) if s.is_empty() => Err("is empty"),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err("must be a string"),
    }
}

/// `obj[key]` as an object.
fn req_obj<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<&'a Map<String, Value>, Why> {
    match obj.get(key) {
        None | Some(Value::Null) => Err("is required"),
        Some(Value::Object(o)) => Ok(o),
        Some(_) => Err("must be an object"),
    }
}

/// `obj[key]`, if present, as a string.
fn opt_str<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, Why> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err("must be a string"),
    }
}

/// `obj[key]`, if present, as an array of strings.
fn opt_str_array(obj: &Map<String, Value>, key: &str) -> Result<(), Why> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => Ok(()),
        Some(_) => Err("must be an array of strings"),
    }
}

/// `obj[key]`, if present, as a boolean.
fn opt_bool(obj: &Map<String, Value>, key: &str) -> Result<(), Why> {
    match obj.get(key) {
        None | Some(Value::Null) | Some(Value::Bool(_)) => Ok(()),
        Some(_) => Err("must be a boolean"),
    }
}

/// Every string inside `v`, for keyword checks on rich messages.
fn collect_strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

/// Provider paths of the three robots and the `/_mock/robots/*` controls.
pub(crate) fn routes() -> Router<MockState> {
    Router::new()
        .merge(wecom::routes())
        .merge(dingtalk::routes())
        .merge(feishu::routes())
        .merge(control::routes())
}
