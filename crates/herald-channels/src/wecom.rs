//! The `wecom` channel: WeCom (企业微信) app messages.
//!
//! `POST /cgi-bin/message/send` carries one message to up to 1000 userids
//! (`touser`, `|`-joined) plus up to 100 departments (`toparty`) and 100 tags
//! (`totag`), so [`Channel::send_batch`] sends a campaign segment in calls of
//! 1000 and maps the answer back to each delivery:
//!
//! - recipients listed in `invaliduser` / `invalidparty` / `invalidtag` /
//!   `unlicenseduser` (userids compared lower-cased, as WeCom lower-cases them)
//!   fail permanently, everyone else is delivered with the call's `msgid`;
//! - 81013 (every recipient invalid) fails the whole call permanently;
//! - 45009 / 45033 throttle, -1 is retryable, 40001/40014/42001 expire the
//!   token (compare-and-expire), refresh once and send once more;
//! - any other non-zero code fails the call permanently; transport errors and
//!   HTTP 5xx are retryable.
//!
//! A recipient is a userid, or `party:ID` / `tag:ID` for a department or tag
//! that WeCom fans out itself ([`Channel::fans_out`]).
//!
//! **Idempotency.** Every call sets `enable_duplicate_check: 1` with
//! `duplicate_check_interval: 1800`; WeCom then drops a request whose JSON is
//! identical to one it took in the last 30 minutes. To make that hash cover the
//! idempotency key, the body carries a top-level `herald_key` field (WeCom
//! ignores fields it does not know): the delivery's key for a single delivery,
//! or `batch:` + SHA-256 of the keys (newline-joined, in order) for a batch.
//! A retried call of the same deliveries is therefore byte-identical (the body
//! is serialized with sorted keys) and two distinct deliveries of the same
//! text are not mistaken for one. A retry that groups deliveries differently
//! is a different request and is not de-duplicated.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use herald_core::Clock;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::provider_http::{Answer, ProviderHttp, Secret, retryable, token_outcome};
use crate::token_cache::{FetchedToken, TokenCache, TokenCacheOptions, TokenError, TokenUse};
use crate::weixin::{SYSTEM_BUSY, TOKEN_CODES, errcode, msgid_text, parse_token_answer};
use crate::{
    BuildContext, Channel, ChannelError, ChannelKind, CommonSettings, Delivery, ProviderStatus,
    RecallError, SendOutcome, WecomConfig,
};

/// The real API.
pub const DEFAULT_API_BASE: &str = "https://qyapi.weixin.qq.com";
/// Userids per `message/send` call.
pub const MAX_USERS_PER_CALL: usize = 1000;
/// Departments, and tags, per call.
pub const MAX_PARTIES_PER_CALL: usize = 100;
/// Messages younger than this can be recalled.
pub const RECALL_WINDOW_HOURS: u32 = 24;
/// Seconds WeCom remembers a request for its duplicate check.
pub const DUPLICATE_CHECK_INTERVAL: u64 = 1800;
pub struct WecomChannel {
    name: String,
    corpid: String,
    corpsecret: Secret,
    agentid: i64,
    http: ProviderHttp,
    tokens: TokenCache,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for WecomChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WecomChannel")
            .field("name", &self.name)
            .field("corpid", &self.corpid)
            .field("corpsecret", &self.corpsecret)
            .field("agentid", &self.agentid)
            .finish()
    }
}

/// Where one delivery goes inside a call.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    User(String),
    Party(String),
    Tag(String),
}

impl Target {
    fn parse(recipient: &str) -> Result<Target, String> {
        let r = recipient.trim();
        let (t, id) = if let Some(id) = r.strip_prefix("party:") {
            (Target::Party(id.trim().to_string()), id.trim())
        } else if let Some(id) = r.strip_prefix("tag:") {
            (Target::Tag(id.trim().to_string()), id.trim())
        } else {
            (Target::User(r.to_string()), r)
        };
        if id.is_empty() {
            return Err(format!(
                "recipient {recipient:?} names no userid, party or tag"
            ));
        }
        if id.contains('|') {
            return Err(format!("recipient {recipient:?} must not contain '|'"));
        }
        if id == "@all" {
            return Err("recipient @all is not allowed; name users, parties or tags".into());
        }
        Ok(t)
    }
}

/// One `message/send` call: the deliveries (by index) it carries.
struct Call {
    message: String,
    members: Vec<(usize, Target)>,
    users: usize,
    parties: usize,
    tags: usize,
}

impl Call {
    fn fits(&self, message: &str, t: &Target) -> bool {
        self.message == message
            && match t {
                Target::User(_) => self.users < MAX_USERS_PER_CALL,
                Target::Party(_) => self.parties < MAX_PARTIES_PER_CALL,
                Target::Tag(_) => self.tags < MAX_PARTIES_PER_CALL,
            }
    }

    fn push(&mut self, i: usize, t: Target) {
        match t {
            Target::User(_) => self.users += 1,
            Target::Party(_) => self.parties += 1,
            Target::Tag(_) => self.tags += 1,
        }
        self.members.push((i, t));
    }
}

impl WecomChannel {
    pub fn new(
        common: &CommonSettings,
        cfg: &WecomConfig,
        ctx: &BuildContext,
    ) -> Result<Self, ChannelError> {
        Self::with_options(common, cfg, ctx, TokenCacheOptions::default())
    }

    /// As [`WecomChannel::new`], with the token cache's clock and margins
    /// (the clock also judges the recall window).
    pub fn with_options(
        common: &CommonSettings,
        cfg: &WecomConfig,
        ctx: &BuildContext,
        opts: TokenCacheOptions,
    ) -> Result<Self, ChannelError> {
        let corpid = cfg.corpid.trim().to_string();
        if corpid.is_empty() {
            return Err(common.err("corpid must not be empty"));
        }
        let corpsecret = cfg
            .corpsecret
            .resolve("corpsecret")
            .map_err(|e| common.err(&e))?;
        let agentid = cfg.agentid;
        let base = cfg.api_base.as_deref().unwrap_or(DEFAULT_API_BASE);
        let http = ProviderHttp::new(common, cfg.ca_file.as_deref(), base)?;
        let clock = opts.clock.clone();
        let tokens = TokenCache::new(
            format!("wecom:{corpid}:{agentid}"),
            ctx.vault.clone(),
            ctx.node_id.clone(),
            opts,
        );
        Ok(Self {
            name: common.name.clone(),
            corpid,
            corpsecret: Secret::new(corpsecret),
            agentid,
            http,
            tokens,
            clock,
        })
    }

    async fn token(&self) -> Result<String, TokenError> {
        self.tokens.get(|_hint| self.fetch_token()).await
    }

    async fn fetch_token(&self) -> Result<FetchedToken, TokenError> {
        let path = "/cgi-bin/gettoken";
        let req = self.http.get(&self.http.url(path)).query(&[
            ("corpid", self.corpid.as_str()),
            ("corpsecret", self.corpsecret.expose()),
        ]);
        let answer = self
            .http
            .call(req, "GET", path)
            .await
            .map_err(|e| TokenError::Failed(e.to_string()))?;
        parse_token_answer(&answer, path)
    }

    /// POSTs `body` to `path` with a token, refreshing the token once if the
    /// provider rejects it. Returns the answer's JSON or the outcome to report.
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
                        Ok(v) => {
                            if TOKEN_CODES.contains(&errcode(&v).0) {
                                TokenUse::Rejected(Ok(v))
                            } else {
                                TokenUse::Answered(Ok(v))
                            }
                        }
                        Err(o) => TokenUse::Answered(Err(o)),
                    }
                },
            )
            .await
            .map_err(token_outcome)?
    }

    /// The request body for `call`.
    fn body(&self, call: &Call, keys: &[&str]) -> Result<Value, String> {
        let mut msg: Map<String, Value> = match serde_json::from_str(&call.message) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err("the wecom message must be a JSON object".into()),
            Err(e) => return Err(format!("the wecom message is not JSON: {e}")),
        };
        crate::shape::check(ChannelKind::Wecom, &Value::Object(msg.clone()))
            .map_err(|e| e.message)?;
        let join = |pick: fn(&Target) -> Option<&String>| {
            call.members
                .iter()
                .filter_map(|(_, t)| pick(t).cloned())
                .collect::<Vec<_>>()
                .join("|")
        };
        let users = join(|t| match t {
            Target::User(u) => Some(u),
            _ => None,
        });
        let parties = join(|t| match t {
            Target::Party(p) => Some(p),
            _ => None,
        });
        let tags = join(|t| match t {
            Target::Tag(g) => Some(g),
            _ => None,
        });
        for k in ["touser", "toparty", "totag"] {
            msg.remove(k);
        }
        if !users.is_empty() {
            msg.insert("touser".into(), Value::String(users));
        }
        if !parties.is_empty() {
            msg.insert("toparty".into(), Value::String(parties));
        }
        if !tags.is_empty() {
            msg.insert("totag".into(), Value::String(tags));
        }
        msg.insert("agentid".into(), Value::from(self.agentid));
        msg.insert("enable_duplicate_check".into(), Value::from(1));
        msg.entry("duplicate_check_interval")
            .or_insert(Value::from(DUPLICATE_CHECK_INTERVAL));
        msg.insert("herald_key".into(), Value::String(herald_key(keys)));
        Ok(Value::Object(msg))
    }

    /// Sends one call and returns one outcome per member, in member order.
    async fn send_call(&self, call: &Call, deliveries: &[Delivery]) -> Vec<SendOutcome> {
        let n = call.members.len();
        let keys: Vec<&str> = call
            .members
            .iter()
            .map(|(i, _)| deliveries[*i].idempotency_key.as_str())
            .collect();
        let body = match self.body(call, &keys) {
            Ok(b) => b,
            Err(error) => {
                return vec![
                    SendOutcome::Permanent {
                        error,
                        status: None
                    };
                    n
                ];
            }
        };
        let v = match self.call_with_token("/cgi-bin/message/send", &body).await {
            Ok(v) => v,
            Err(outcome) => return vec![outcome; n],
        };
        let (code, msg) = errcode(&v);
        let error = format!("errcode {code}: {msg}");
        let status = Some(code);
        let whole = match code {
            0 => None,
            c if TOKEN_CODES.contains(&c) || c == SYSTEM_BUSY => Some(retryable(error, status)),
            45009 | 45033 => Some(SendOutcome::Throttled {
                error,
                status,
                retry_after_ms: None,
            }),
            81013 => Some(SendOutcome::Permanent {
                error: format!("every recipient of the call is invalid ({error})"),
                status,
            }),
            _ => Some(SendOutcome::Permanent { error, status }),
        };
        if let Some(outcome) = whole {
            tracing::info!(channel = %self.name, recipients = n, errcode = code, class = outcome.class(), "wecom send failed as a whole");
            return vec![outcome; n];
        }
        let list = |field: &str| -> HashSet<String> {
            v.get(field)
                .and_then(Value::as_str)
                .unwrap_or("")
                .split('|')
                .filter(|s| !s.is_empty())
                .map(str::to_lowercase)
                .collect()
        };
        let bad_users = list("invaliduser");
        let unlicensed = list("unlicenseduser");
        let bad_parties = list("invalidparty");
        let bad_tags = list("invalidtag");
        let msgid = v.get("msgid").and_then(msgid_text);
        let mut invalid = 0usize;
        let out: Vec<SendOutcome> = call
            .members
            .iter()
            .map(|(_, t)| {
                let reason = match t {
                    Target::User(u) if bad_users.contains(&u.to_lowercase()) => {
                        Some(format!("invalid userid {u:?} (invaliduser)"))
                    }
                    Target::User(u) if unlicensed.contains(&u.to_lowercase()) => {
                        Some(format!("userid {u:?} has no license (unlicenseduser)"))
                    }
                    Target::Party(p) if bad_parties.contains(&p.to_lowercase()) => {
                        Some(format!("invalid party {p:?} (invalidparty)"))
                    }
                    Target::Tag(g) if bad_tags.contains(&g.to_lowercase()) => {
                        Some(format!("invalid tag {g:?} (invalidtag)"))
                    }
                    _ => None,
                };
                match reason {
                    Some(error) => {
                        invalid += 1;
                        SendOutcome::Permanent {
                            error,
                            status: Some(0),
                        }
                    }
                    None => SendOutcome::Delivered {
                        provider_msgid: msgid.clone(),
                        status: Some(0),
                    },
                }
            })
            .collect();
        tracing::debug!(channel = %self.name, recipients = n, invalid, "wecom send");
        out
    }
}

/// The JSON of a WeCom answer, or the outcome when there is none worth
/// reading: unlike WeChat, any status but `2xx` fails the call as it is.
fn answer_json(answer: &Answer) -> Result<Value, SendOutcome> {
    if let Some(o) = answer.overload() {
        return Err(o);
    }
    if !answer.is_success() {
        return Err(answer.rejected());
    }
    answer.json_or_outcome()
}

/// The `herald_key` field (see the module docs).
pub fn herald_key(keys: &[&str]) -> String {
    match keys {
        [one] => (*one).to_string(),
        many => {
            let mut h = Sha256::new();
            for (i, k) in many.iter().enumerate() {
                if i > 0 {
                    h.update(b"\n");
                }
                h.update(k.as_bytes());
            }
            format!("batch:{}", hex::encode(h.finalize()))
        }
    }
}

#[async_trait]
impl Channel for WecomChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ChannelKind {
        ChannelKind::Wecom
    }

    fn fans_out(&self) -> bool {
        true
    }

    fn max_batch(&self) -> usize {
        MAX_USERS_PER_CALL
    }

    async fn send(&self, d: &Delivery) -> SendOutcome {
        let mut out = self.send_batch(std::slice::from_ref(d)).await;
        out.pop()
            .unwrap_or_else(|| retryable("no outcome".into(), None))
    }

    async fn send_batch(&self, deliveries: &[Delivery]) -> Vec<SendOutcome> {
        let mut out: Vec<Option<SendOutcome>> = vec![None; deliveries.len()];
        let mut calls: Vec<Call> = Vec::new();
        for (i, d) in deliveries.iter().enumerate() {
            let t = match Target::parse(&d.recipient) {
                Ok(t) => t,
                Err(error) => {
                    out[i] = Some(SendOutcome::Permanent {
                        error,
                        status: None,
                    });
                    continue;
                }
            };
            // Deliveries of one segment share a message; a different one
            // starts a new call, as does a full one.
            match calls.iter_mut().find(|c| c.fits(&d.message, &t)) {
                Some(c) => c.push(i, t),
                None => {
                    let mut c = Call {
                        message: d.message.clone(),
                        members: Vec::new(),
                        users: 0,
                        parties: 0,
                        tags: 0,
                    };
                    c.push(i, t);
                    calls.push(c);
                }
            }
        }
        for call in &calls {
            let outcomes = self.send_call(call, deliveries).await;
            for ((i, _), o) in call.members.iter().zip(outcomes) {
                out[*i] = Some(o);
            }
        }
        out.into_iter()
            .map(|o| o.unwrap_or_else(|| retryable("no outcome".into(), None)))
            .collect()
    }

    async fn recall(&self, provider_msgid: &str, sent_at: i64) -> Result<(), RecallError> {
        let window_ms = i64::from(RECALL_WINDOW_HOURS) * 3_600_000;
        if self.clock.now_ms().saturating_sub(sent_at) > window_ms {
            return Err(RecallError::TooOld {
                window_hours: RECALL_WINDOW_HOURS,
            });
        }
        let body = serde_json::json!({ "msgid": provider_msgid });
        let v = self
            .call_with_token("/cgi-bin/message/recall", &body)
            .await
            .map_err(|o| RecallError::Provider(outcome_text(&o)))?;
        let (code, msg) = errcode(&v);
        if code == 0 {
            tracing::info!(channel = %self.name, msgid = provider_msgid, "wecom message recalled");
            return Ok(());
        }
        Err(RecallError::Provider(format!("errcode {code}: {msg}")))
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

fn outcome_text(o: &SendOutcome) -> String {
    match o {
        SendOutcome::Delivered { .. } => "delivered".into(),
        SendOutcome::Retryable { error, .. }
        | SendOutcome::Permanent { error, .. }
        | SendOutcome::Throttled { error, .. } => error.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_recipients() {
        assert_eq!(
            Target::parse("ZhangSan").unwrap(),
            Target::User("ZhangSan".into())
        );
        assert_eq!(Target::parse("party:2").unwrap(), Target::Party("2".into()));
        assert_eq!(Target::parse("tag:7").unwrap(), Target::Tag("7".into()));
        assert!(Target::parse("party:").is_err());
        assert!(Target::parse("a|b").is_err());
        assert!(Target::parse("@all").is_err());
    }

    #[test]
    fn herald_keys_are_stable_and_distinct() {
        assert_eq!(herald_key(&["k1"]), "k1");
        assert_eq!(herald_key(&["a", "b"]), herald_key(&["a", "b"]));
        assert_ne!(herald_key(&["a", "b"]), herald_key(&["b", "a"]));
        assert!(herald_key(&["a", "b"]).starts_with("batch:"));
    }
}
