//! The `dingtalk_work` channel: DingTalk (钉钉) work notifications (工作通知)
//! of an enterprise internal app (reference `china-providers.md` §5.1).
//!
//! The app authenticates with `GET /gettoken?appkey=&appsecret=`, a token of
//! 7200 s that DingTalk hands out again (and extends) while it is valid. It
//! is shared by every node through [`TokenCache`] under
//! `dingtalk_work:{appkey}`, so two channels of one app share one token, as
//! they must: the token belongs to the app, not to the channel.
//!
//! `POST /topapi/message/corpconversation/asyncsend_v2` carries one message
//! (`msg`, at most 2048 bytes as JSON) to up to 100 userids (`userid_list`,
//! comma-joined), so [`Channel::send_batch`] sends a campaign segment in
//! calls of `max_batch` and a job to 250 users costs three calls, not 250.
//!
//! The send is asynchronous: `errcode 0` means DingTalk took the task, and
//! its `task_id` becomes each delivery's `provider_msgid`. DingTalk does not
//! refuse an unknown userid, nor a message past its limits (the same content
//! to a user once a day, 500 messages a user a day): it accepts the task and
//! lists such users later, in `getsendresult`. So right after a task is
//! taken the channel asks `getsendresult` once; users listed as invalid or
//! forbidden fail permanently, the rest count delivered. When DingTalk has
//! not processed the task yet (or the query fails), the lists are empty and
//! every user counts delivered: accepted is all DingTalk promised.
//!
//! | answer | outcome |
//! |---|---|
//! | `0` | delivered (task id recorded), less the users `getsendresult` lists |
//! | `40014`, `42001`, `40001`, or `88` with one of them as `sub_code` | the token: expire it (compare-and-expire), fetch one, send once more |
//! | `143103`, `143104` (recipients a minute, per app or company), HTTP 429 | throttled: a deferral, no attempt spent |
//! | `-1` (busy), HTTP 5xx, no answer | retryable |
//! | anything else (`88` without a token sub_code is a permission error, parameter errors) | permanent |
//!
//! The token codes are WeChat's numbers, which DingTalk's global code table
//! shares; the reference marks them unverified for DingTalk itself.
//!
//! **Idempotency.** `asyncsend_v2` takes no request id, so a resend after a
//! send that got no answer may reach the user twice (unless it is the very
//! same text on the same day, which DingTalk drops): `in_doubt` defaults to
//! `skip` for this kind.

use std::collections::HashMap;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use crate::message_fields::{ShapeError, err};
use crate::provider_http::{Answer, ProviderHttp, Secret, retryable, token_outcome};
use crate::robots::message::RobotMessage;
use crate::token_cache::{FetchedToken, TokenCache, TokenCacheOptions, TokenError, TokenUse};
use crate::{
    BuildContext, Channel, ChannelError, ChannelKind, CommonSettings, Delivery, DingtalkWorkConfig,
    ProviderStatus, SendOutcome,
};

/// The real API.
pub const DEFAULT_API_BASE: &str = "https://oapi.dingtalk.com";
/// Userids per `asyncsend_v2` call (`userid_list`).
pub const MAX_USERS_PER_CALL: usize = 100;
/// Largest `msg`, as JSON, in bytes.
pub const MAX_MSG_BYTES: usize = 2048;
/// The `msgtype`s of a work notification; each carries the object it names.
pub const MSGTYPES: [&str; 8] = [
    "text",
    "image",
    "voice",
    "file",
    "link",
    "oa",
    "markdown",
    "action_card",
];

const SEND_PATH: &str = "/topapi/message/corpconversation/asyncsend_v2";
const RESULT_PATH: &str = "/topapi/message/corpconversation/getsendresult";
const TOKEN_PATH: &str = "/gettoken";
/// Codes that say the access token is not (or no longer) good.
const TOKEN_CODES: [i64; 3] = [40001, 40014, 42001];
/// "Authentication error": the `sub_code` says which.
const AUTH_ERROR: i64 = 88;
/// Recipients a minute over the app's (`143103`) or the company's
/// (`143104`) limit: retry later.
const THROTTLE_CODES: [i64; 2] = [143103, 143104];
const BUSY: i64 = -1;

/// Reads a work notification: Herald's robot shape (`{text}` or
/// `{markdown, title}`) or DingTalk's own (`{msgtype, <msgtype>: {..}}`),
/// and returns DingTalk's `msg` for it, checked against the 2048-byte cap.
pub fn check_message(m: &Map<String, Value>) -> Result<Value, ShapeError> {
    let msg = if m.contains_key("msgtype") {
        native(m)?
    } else if m.contains_key("msg_type") {
        return Err(err(
            "msg_type",
            "a dingtalk_work message names its type with \"msgtype\", not \"msg_type\"",
        ));
    } else {
        match crate::robots::message::common(m, None)? {
            RobotMessage::Text(text) => json!({"msgtype": "text", "text": {"content": text}}),
            RobotMessage::Markdown { title, text } => {
                let title = title.unwrap_or_else(|| first_line(&text));
                json!({"msgtype": "markdown", "markdown": {"title": title, "text": text}})
            }
            RobotMessage::Native(n) => Value::Object(n),
        }
    };
    let bytes = msg.to_string().len();
    if bytes > MAX_MSG_BYTES {
        return Err(err(
            "",
            format!(
                "the dingtalk_work msg is {bytes} bytes as JSON; DingTalk takes at most {MAX_MSG_BYTES}"
            ),
        ));
    }
    Ok(msg)
}

/// DingTalk's own shape, as written: a known `msgtype` and its object, and
/// nothing else (`agent_id` and `userid_list` are the channel's to set).
fn native(m: &Map<String, Value>) -> Result<Value, ShapeError> {
    let ty = match m.get("msgtype") {
        Some(Value::String(s)) if MSGTYPES.contains(&s.as_str()) => s.as_str(),
        _ => {
            return Err(err(
                "msgtype",
                format!("a dingtalk_work msgtype is one of {}", MSGTYPES.join(", ")),
            ));
        }
    };
    if !matches!(m.get(ty), Some(Value::Object(_))) {
        return Err(err(
            ty,
            format!("a dingtalk_work message of msgtype {ty:?} needs a {ty:?} object"),
        ));
    }
    if let Some(k) = m.keys().find(|k| *k != "msgtype" && *k != ty) {
        return Err(err(
            k.as_str(),
            format!("a dingtalk_work message holds msgtype and its {ty:?} object only, not {k:?}"),
        ));
    }
    Ok(Value::Object(m.clone()))
}

/// A Markdown message's title when none is given: DingTalk requires one (the
/// notification list shows it). The first line with words, without `#`s.
fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("Herald");
    line.chars().take(64).collect()
}

/// A userid as `userid_list` can carry it.
fn check_userid(r: &str) -> Result<&str, String> {
    let id = r.trim();
    if id.is_empty() {
        return Err("the recipient (a DingTalk userid) is empty".into());
    }
    if id.contains(',') {
        return Err(format!(
            "recipient {r:?} holds a comma; give one DingTalk userid per recipient"
        ));
    }
    Ok(id)
}

pub struct DingtalkWorkChannel {
    name: String,
    appkey: String,
    appsecret: Secret,
    agent_id: i64,
    max_batch: usize,
    http: ProviderHttp,
    tokens: TokenCache,
}

impl std::fmt::Debug for DingtalkWorkChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DingtalkWorkChannel")
            .field("name", &self.name)
            .field("appkey", &self.appkey)
            .field("appsecret", &self.appsecret)
            .field("agent_id", &self.agent_id)
            .finish()
    }
}

/// What one `asyncsend_v2` answer means for the whole call.
#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    /// Taken: the task id.
    Accepted(Option<String>),
    /// The same outcome for every user of the call.
    All(SendOutcome),
}

/// An answer's `errcode` (0 when absent), `sub_code` and `errmsg`.
fn codes(v: &Value) -> (i64, Option<i64>, String) {
    let code = v.get("errcode").and_then(Value::as_i64).unwrap_or(0);
    let sub = match v.get("sub_code") {
        Some(Value::String(s)) => s.parse().ok(),
        Some(Value::Number(n)) => n.as_i64(),
        _ => None,
    };
    let msg = v
        .get("errmsg")
        .and_then(Value::as_str)
        .unwrap_or("")
        .chars()
        .take(300)
        .collect();
    (code, sub, msg)
}

/// Whether an answer refuses the token rather than the request.
fn token_refused(v: &Value) -> bool {
    let (code, sub, _) = codes(v);
    TOKEN_CODES.contains(&code)
        || code == AUTH_ERROR && sub.is_some_and(|s| TOKEN_CODES.contains(&s))
}

fn classify(v: &Value) -> Verdict {
    let (code, sub, msg) = codes(v);
    let status = Some(code);
    let error = match sub {
        Some(s) => format!("dingtalk errcode {code} (sub_code {s}): {msg}"),
        None => format!("dingtalk errcode {code}: {msg}"),
    };
    match code {
        0 => Verdict::Accepted(v.get("task_id").and_then(id_text)),
        c if THROTTLE_CODES.contains(&c) => Verdict::All(SendOutcome::Throttled {
            error,
            status,
            retry_after_ms: None,
        }),
        BUSY => Verdict::All(retryable(error, status)),
        // A token refused twice in a row: retry later with whatever token
        // the cache then holds.
        _ if token_refused(v) => Verdict::All(retryable(error, status)),
        _ => Verdict::All(SendOutcome::Permanent { error, status }),
    }
}

/// A task id as text, whether DingTalk sent a number or a string.
fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// Why users of a taken task will not get it, from a `getsendresult`
/// answer: userid to reason.
fn refused_users(v: &Value) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let Some(r) = v.get("send_result") else {
        return out;
    };
    let list = |k: &str| -> Vec<String> {
        r.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|u| u.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    for u in list("invalid_user_id_list") {
        out.insert(
            u.clone(),
            format!("DingTalk knows no user {u:?} in this company (invalid_user_id_list)"),
        );
    }
    for u in list("forbidden_user_id_list") {
        out.entry(u.clone()).or_insert_with(|| {
            format!(
                "DingTalk dropped the message to {u:?} (forbidden_user_id_list: the same content once a day, or 500 a user a day)"
            )
        });
    }
    out
}

impl DingtalkWorkChannel {
    pub fn new(
        common: &CommonSettings,
        cfg: &DingtalkWorkConfig,
        ctx: &BuildContext,
    ) -> Result<Self, ChannelError> {
        Self::with_options(common, cfg, ctx, TokenCacheOptions::default())
    }

    /// As [`DingtalkWorkChannel::new`], with the token cache's clock and
    /// margins.
    pub fn with_options(
        common: &CommonSettings,
        cfg: &DingtalkWorkConfig,
        ctx: &BuildContext,
        opts: TokenCacheOptions,
    ) -> Result<Self, ChannelError> {
        cfg.check().map_err(|e| common.err(&e))?;
        let appkey = cfg.appkey.trim().to_string();
        let appsecret = cfg
            .appsecret
            .resolve("appsecret")
            .map_err(|e| common.err(&e))?;
        let base = cfg.api_base.as_deref().unwrap_or(DEFAULT_API_BASE);
        let http = ProviderHttp::new(common, cfg.ca_file.as_deref(), base)?;
        let tokens = TokenCache::new(
            format!("dingtalk_work:{appkey}"),
            ctx.vault.clone(),
            ctx.node_id.clone(),
            opts,
        );
        Ok(Self {
            name: common.name.clone(),
            appkey,
            appsecret: Secret::new(appsecret),
            agent_id: cfg.agent_id,
            max_batch: cfg.max_batch.unwrap_or(MAX_USERS_PER_CALL),
            http,
            tokens,
        })
    }

    async fn token(&self) -> Result<String, TokenError> {
        self.tokens.get(|_hint| self.fetch_token()).await
    }

    async fn fetch_token(&self) -> Result<FetchedToken, TokenError> {
        let req = self.http.get(&self.http.url(TOKEN_PATH)).query(&[
            ("appkey", self.appkey.as_str()),
            ("appsecret", self.appsecret.expose()),
        ]);
        let answer = self
            .http
            .call(req, "GET", TOKEN_PATH)
            .await
            .map_err(|e| TokenError::Failed(e.to_string()))?;
        if answer.status == 429 {
            return Err(TokenError::Throttled(format!("{TOKEN_PATH}: HTTP 429")));
        }
        let Some(v) = answer.json() else {
            return Err(TokenError::Failed(format!(
                "{TOKEN_PATH}: HTTP {} with a non-JSON answer",
                answer.status
            )));
        };
        let (code, _, msg) = codes(&v);
        if THROTTLE_CODES.contains(&code) {
            return Err(TokenError::Throttled(format!(
                "{TOKEN_PATH}: errcode {code}: {msg}"
            )));
        }
        match (
            v.get("access_token").and_then(Value::as_str),
            v.get("expires_in").and_then(Value::as_i64),
        ) {
            (Some(t), Some(secs)) if code == 0 && !t.is_empty() => Ok(FetchedToken {
                token: t.to_string(),
                expires_in_secs: secs,
            }),
            _ => Err(TokenError::Failed(format!(
                "{TOKEN_PATH}: HTTP {}: errcode {code}: {msg}",
                answer.status
            ))),
        }
    }

    /// POSTs `body` to `path` with the token, refreshing it once if DingTalk
    /// refuses it. The answer's JSON, or the outcome to report.
    async fn call_with_token(&self, path: &str, body: &Value) -> Result<Value, SendOutcome> {
        self.tokens
            .with_refresh(
                || self.token(),
                |token| async move {
                    let req = self
                        .http
                        .post(&self.http.url(path))
                        .query(&[("access_token", token.as_str())])
                        .json(body);
                    let answer = match self.http.call(req, "POST", path).await {
                        Ok(a) => a,
                        Err(e) => return TokenUse::Answered(Err(retryable(e.to_string(), None))),
                    };
                    match answer_json(&answer) {
                        Ok(v) if token_refused(&v) => TokenUse::Rejected(Ok(v)),
                        other => TokenUse::Answered(other),
                    }
                },
            )
            .await
            .map_err(token_outcome)?
    }

    /// One `asyncsend_v2` of `msg` to `users`: an outcome per user, in order.
    async fn send_call(&self, msg: &Value, users: &[&str]) -> Vec<SendOutcome> {
        let body = json!({
            "agent_id": self.agent_id,
            "userid_list": users.join(","),
            "msg": msg,
        });
        let verdict = match self.call_with_token(SEND_PATH, &body).await {
            Ok(v) => classify(&v),
            Err(o) => Verdict::All(o),
        };
        let task_id = match verdict {
            Verdict::Accepted(t) => t,
            Verdict::All(o) => {
                tracing::info!(channel = %self.name, users = users.len(), class = o.class(), "dingtalk work notification not taken");
                return vec![o; users.len()];
            }
        };
        let refused = match &task_id {
            Some(t) => self.send_result(t).await,
            None => HashMap::new(),
        };
        tracing::debug!(channel = %self.name, users = users.len(), refused = refused.len(), task_id = task_id.as_deref().unwrap_or(""), "dingtalk work notification taken");
        users
            .iter()
            .map(|u| match refused.get(*u) {
                Some(error) => SendOutcome::Permanent {
                    error: error.clone(),
                    status: Some(0),
                },
                None => SendOutcome::Delivered {
                    provider_msgid: task_id.clone(),
                    status: Some(0),
                },
            })
            .collect()
    }

    /// The users `getsendresult` already lists as invalid or forbidden for
    /// `task_id`; empty when the query fails (the task was taken, and that
    /// is what counts).
    async fn send_result(&self, task_id: &str) -> HashMap<String, String> {
        let task: Value = task_id
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::from(task_id));
        let body = json!({"agent_id": self.agent_id, "task_id": task});
        match self.call_with_token(RESULT_PATH, &body).await {
            Ok(v) if codes(&v).0 == 0 => refused_users(&v),
            Ok(v) => {
                let (code, _, msg) = codes(&v);
                tracing::warn!(channel = %self.name, task_id, errcode = code, errmsg = %msg, "dingtalk getsendresult refused; the task's users count delivered");
                HashMap::new()
            }
            Err(o) => {
                tracing::warn!(channel = %self.name, task_id, class = o.class(), "dingtalk getsendresult failed; the task's users count delivered");
                HashMap::new()
            }
        }
    }
}

/// The JSON of an answer, or the outcome when there is none worth reading.
fn answer_json(answer: &Answer) -> Result<Value, SendOutcome> {
    if let Some(o) = answer.overload() {
        return Err(o);
    }
    if !answer.is_success() {
        return Err(answer.rejected());
    }
    answer.json_or_outcome()
}

#[async_trait]
impl Channel for DingtalkWorkChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        ChannelKind::DingtalkWork
    }

    fn max_batch(&self) -> usize {
        self.max_batch
    }

    async fn send(&self, d: &Delivery) -> SendOutcome {
        self.send_batch(std::slice::from_ref(d))
            .await
            .pop()
            .unwrap_or_else(|| retryable("no outcome".into(), None))
    }

    /// Deliveries with the same message share calls of up to `max_batch`
    /// userids; each gets its own outcome. A userid twice in one call would
    /// be one notification for two deliveries, so a repeat starts another
    /// call.
    async fn send_batch(&self, deliveries: &[Delivery]) -> Vec<SendOutcome> {
        let mut out: Vec<Option<SendOutcome>> = vec![None; deliveries.len()];
        // (message text, msg, indexes) in first-seen order.
        let mut calls: Vec<(&str, Value, Vec<usize>)> = Vec::new();
        for (i, d) in deliveries.iter().enumerate() {
            let user = match check_userid(&d.recipient) {
                Ok(u) => u,
                Err(error) => {
                    out[i] = Some(SendOutcome::Permanent {
                        error,
                        status: None,
                    });
                    continue;
                }
            };
            let open = calls.iter_mut().rfind(|(m, _, ix)| {
                *m == d.message
                    && ix.len() < self.max_batch
                    && !ix.iter().any(|&j| deliveries[j].recipient.trim() == user)
            });
            match open {
                Some((_, _, ix)) => ix.push(i),
                None => {
                    let msg = serde_json::from_str::<Value>(&d.message)
                        .map_err(|e| format!("the message is not JSON: {e}"))
                        .and_then(|v| match v.as_object() {
                            Some(m) => check_message(m).map_err(|e| e.message),
                            None => Err("the message must be a JSON object".into()),
                        });
                    match msg {
                        Ok(msg) => calls.push((&d.message, msg, vec![i])),
                        Err(error) => {
                            out[i] = Some(SendOutcome::Permanent {
                                error,
                                status: None,
                            })
                        }
                    }
                }
            }
        }
        for (_, msg, ix) in &calls {
            let users: Vec<&str> = ix.iter().map(|&i| deliveries[i].recipient.trim()).collect();
            let outcomes = self.send_call(msg, &users).await;
            for (&i, o) in ix.iter().zip(outcomes) {
                out[i] = Some(o);
            }
        }
        out.into_iter()
            .map(|o| o.unwrap_or_else(|| retryable("no outcome".into(), None)))
            .collect()
    }

    async fn provider_status(&self) -> ProviderStatus {
        ProviderStatus {
            token_valid_until: self.tokens.valid_until().await,
        }
    }

    fn token_key(&self) -> Option<&str> {
        Some(self.tokens.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn herald_and_dingtalk_shapes_become_a_msg() {
        assert_eq!(
            check_message(&obj(json!({"text": "hi"}))).unwrap(),
            json!({"msgtype": "text", "text": {"content": "hi"}})
        );
        assert_eq!(
            check_message(&obj(json!({"markdown": "## Rota\nyou are on call"}))).unwrap(),
            json!({"msgtype": "markdown", "markdown": {"title": "Rota", "text": "## Rota\nyou are on call"}})
        );
        let card = json!({"msgtype": "action_card", "action_card": {"title": "t", "markdown": "m", "single_title": "Open", "single_url": "https://x"}});
        assert_eq!(check_message(&obj(card.clone())).unwrap(), card);
        let field = |v: Value| check_message(&obj(v)).unwrap_err().field;
        assert_eq!(
            field(json!({"msgtype": "actionCard", "actionCard": {}})),
            "msgtype"
        );
        assert_eq!(field(json!({"msgtype": "markdown"})), "markdown");
        assert_eq!(
            field(json!({"msgtype": "text", "text": {"content": "x"}, "agent_id": 1})),
            "agent_id"
        );
        assert_eq!(field(json!({"msg_type": "text"})), "msg_type");
        assert_eq!(field(json!({"text": "x", "title": "t"})), "title");
        let long = "x".repeat(MAX_MSG_BYTES);
        assert!(
            check_message(&obj(json!({"text": long})))
                .unwrap_err()
                .message
                .contains("2048")
        );
    }

    #[test]
    fn answers_map_to_outcomes() {
        let class = |v: Value| match classify(&v) {
            Verdict::Accepted(t) => format!("accepted {}", t.unwrap_or_default()),
            Verdict::All(o) => o.class().to_string(),
        };
        assert_eq!(
            class(json!({"errcode": 0, "errmsg": "ok", "task_id": 256_271_667_526_i64})),
            "accepted 256271667526"
        );
        assert_eq!(
            class(json!({"errcode": 143103, "errmsg": "qpm"})),
            "throttled"
        );
        assert_eq!(class(json!({"errcode": 143104})), "throttled");
        assert_eq!(class(json!({"errcode": -1, "errmsg": "busy"})), "retry");
        assert_eq!(
            class(json!({"errcode": 88, "sub_code": "60011", "errmsg": "no permission"})),
            "permanent"
        );
        assert_eq!(
            class(json!({"errcode": 40035, "errmsg": "bad param"})),
            "permanent"
        );
        assert!(token_refused(&json!({"errcode": 42001})));
        assert!(token_refused(&json!({"errcode": 88, "sub_code": "40014"})));
        assert!(!token_refused(&json!({"errcode": 88, "sub_code": "60011"})));
    }

    #[test]
    fn getsendresult_lists_become_reasons() {
        let r = refused_users(&json!({"errcode": 0, "send_result": {
            "invalid_user_id_list": ["ghost"], "forbidden_user_id_list": ["tired", "ghost"],
            "unread_user_id_list": ["ok"]}}));
        assert_eq!(r.len(), 2);
        assert!(r["ghost"].contains("invalid_user_id_list"));
        assert!(r["tired"].contains("forbidden"));
        assert!(refused_users(&json!({"errcode": 0})).is_empty());
        assert!(check_userid("a,b").is_err());
        assert!(check_userid("  ").is_err());
        assert_eq!(check_userid(" manager4220 ").unwrap(), "manager4220");
    }
}
