//! Channel routes: each channel's state (`GET /v1/channels`), provider
//! callbacks that report a delivery's final fate, and recall.
//!
//! What an app or a relayed callback reports after a send (`POST
//! /v1/receipts`) is in [`receipts`].

pub(crate) mod docs;
pub(crate) mod receipts;

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Extension, Path, RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use herald_channels::{CallbackError, CallbackEvent, CallbackRequest, RecallError};
use herald_core::time::{format_rfc3339_ms, parse_rfc3339_ms};
use herald_engine::ChannelStatus;
use serde::{Deserialize, Serialize};

use crate::access::Caller;
use crate::http::body_limits::{CALLBACK_MAX_BYTES, PAUSE_MAX_BYTES};
use crate::http::error::{ApiError, store_err};
use crate::http::json_body;
use crate::http::rate::RateSampler;
use crate::http::request::{NoQuery, action as split_action, parse_id, read_body};
use crate::http::state::AppState;
use crate::http::tenancy::mine;

/// Longest pause reason kept.
const MAX_REASON_BYTES: usize = 512;
/// Looks for a callback's delivery this many times...
const CALLBACK_TRIES: u32 = 20;
/// ...this far apart (WeChat waits 5 s for an answer).
const CALLBACK_RETRY_MS: u64 = 200;

// The document states a channel as one object (the engine's
// `ChannelStatus` inlined, merged by `openapi::schemas`); `rate_per_s` and
// `recent_outcomes` are documented as they were before the answer was
// typed: the first as optional, the second not at all.
/// A channel: configuration, provider state, outcomes and current rate.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Channel)]
pub(crate) struct ChannelJson {
    #[serde(flatten)]
    #[schema(inline)]
    status: ChannelStatus,
    /// Provider answers per second over the last ~10 s on this node.
    current_rate: f64,
    /// Attempts per second over the last 10 whole seconds (the live window).
    #[schema(value_type = Option<f64>)]
    rate_per_s: f64,
    /// Attempts of the last minute by outcome (the live window).
    #[schema(ignore)]
    recent_outcomes: std::collections::BTreeMap<String, u64>,
    /// Paused by an operator (`:pause`, cluster-wide); `null` when not.
    paused: Option<PausedJson>,
    /// The provider's access token, for channels that send with one.
    token: Option<TokenJson>,
}

/// `GET /v1/channels`: every channel the caller is served.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ChannelList)]
pub(crate) struct ChannelList {
    channels: Vec<ChannelJson>,
}

/// An operator's pause of a channel.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ChannelPause)]
pub(crate) struct PausedJson {
    since: String,
    until: Option<String>,
    reason: Option<String>,
}

/// A channel's provider access token: valid now, and until when.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ChannelToken)]
pub(crate) struct TokenJson {
    valid: bool,
    expires_at: Option<String>,
}

impl ChannelJson {
    /// `lends_token`: the channel sends with an access token the provider
    /// lends (see [`lends_token`]), whose validity is shown.
    fn new(status: ChannelStatus, current_rate: f64, now: i64, lends_token: bool) -> Self {
        let paused = status.operator_pause.as_ref().map(|p| PausedJson {
            since: format_rfc3339_ms(p.since),
            until: p.until.map(format_rfc3339_ms),
            reason: p.reason.clone(),
        });
        let token = lends_token.then(|| TokenJson {
            valid: status.token_valid_until.is_some_and(|t| t > now),
            expires_at: status.token_valid_until.map(format_rfc3339_ms),
        });
        Self {
            status,
            current_rate,
            rate_per_s: 0.0,
            recent_outcomes: std::collections::BTreeMap::new(),
            paused,
            token,
        }
    }

    /// With the channel's figures from the live window.
    fn with_live(mut self, live: &herald_engine::LiveView) -> Self {
        if let Some(recent) = live.channels.iter().find(|c| c.name == self.status.name) {
            self.rate_per_s = recent.rate_per_s;
            self.recent_outcomes = crate::api::admin::overview::outcomes_json(recent);
        }
        self
    }
}

/// `GET /v1/channels`: every channel's token, pause, quiet hours, rate and
/// outcome counts on this node. No secret is part of any of it. A channel
/// limited to other tenants than the caller's is left out.
pub async fn list(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Extension(rates): Extension<Arc<RateSampler<String>>>,
) -> Response {
    let now = st.clock.now_ms();
    let live = st.engine.live(None);
    let channels: Vec<ChannelJson> = st
        .engine
        .channel_statuses()
        .await
        .into_iter()
        .filter(|status| st.access.channels().serves(&status.name, caller.tenant))
        .map(|status| {
            let current_rate =
                rates.observe(status.name.clone(), now, status.outcomes.sends(), None);
            let lends = lends_token(&st, &status.name);
            ChannelJson::new(status, current_rate, now, lends).with_live(&live)
        })
        .collect();
    axum::Json(ChannelList { channels }).into_response()
}

/// The whole body is optional.
#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = PauseRequest)]
pub(crate) struct PauseBody {
    /// A time in the future; held until resumed when absent.
    #[schema(format = DateTime)]
    until: Option<String>,
    reason: Option<String>,
}

/// `POST /v1/deliveries/{id}:recall`'s answer.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Recalled)]
pub(crate) struct RecalledJson {
    id: i64,
    channel: String,
    provider_msgid: Option<String>,
    final_status: String,
    /// Unix ms.
    recalled_at: i64,
}

/// `POST /v1/channels/{name}:pause` (body optional: `{"until"?, "reason"?}`)
/// and `POST /v1/channels/{name}:resume` → `200` the channel. The pause is
/// stored cluster-wide: every node holds the channel's deliveries, without
/// using attempts, within about a second; this node at once.
pub async fn pause_action(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Extension(rates): Extension<Arc<RateSampler<String>>>,
    Path(segment): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let (name, verb) = split_action(&segment, "channels", "channel", &["pause", "resume"])?;
    if !st.access.channels().serves(name, caller.tenant) {
        return Err(ApiError::not_found("channel"));
    }
    let now = st.clock.now_ms();
    let status = if verb == "pause" {
        let bytes = read_body(body, PAUSE_MAX_BYTES).await?;
        let req = pause_body(&bytes, now)?;
        st.engine.pause_channel(name, req.0, req.1).await
    } else {
        st.engine.resume_channel(name).await
    };
    let status = status?.ok_or_else(|| ApiError::not_found("channel"))?;
    let current_rate = rates.observe(status.name.clone(), now, status.outcomes.sends(), None);
    let live = st.engine.live(None);
    let lends = lends_token(&st, &status.name);
    Ok(
        axum::Json(ChannelJson::new(status, current_rate, now, lends).with_live(&live))
            .into_response(),
    )
}

/// Whether the channel `name` sends with an access token the provider lends:
/// the channel says so by naming the token it keeps ([`Channel::token_key`]),
/// so a new kind needs no list here.
///
/// [`Channel::token_key`]: herald_channels::Channel::token_key
fn lends_token(st: &AppState, name: &str) -> bool {
    st.engine
        .channel(name)
        .is_some_and(|c| c.token_key().is_some())
}

/// The `until` (Unix ms, in the future) and `reason` of a `:pause` body.
fn pause_body(bytes: &[u8], now: i64) -> Result<(Option<i64>, Option<String>), ApiError> {
    let req: PauseBody = json_body::object_or_empty(bytes)?;
    let until = match req.until.as_deref() {
        None => None,
        Some(s) => {
            let at = parse_rfc3339_ms(s).map_err(|e| {
                ApiError::field(
                    "until",
                    "invalid_field",
                    format!("until {s:?} is not an RFC 3339 time: {e}"),
                )
            })?;
            if at <= now {
                return Err(ApiError::field(
                    "until",
                    "invalid_field",
                    "until is not in the future",
                ));
            }
            Some(at)
        }
    };
    if let Some(r) = &req.reason {
        if r.len() > MAX_REASON_BYTES {
            return Err(ApiError::field(
                "reason",
                "invalid_field",
                format!("reason is longer than {MAX_REASON_BYTES} bytes"),
            ));
        }
        crate::http::text::check_text("reason", r, crate::http::text::Text::Free)?;
    }
    Ok((until, req.reason))
}

/// The decoded pairs of a query string; a malformed one reads as empty, so
/// a signed channel then finds its signature missing.
fn query_pairs(raw: Option<&str>) -> Vec<(String, String)> {
    serde_urlencoded::from_str(raw.unwrap_or_default()).unwrap_or_default()
}

/// A signed channel's callback reached without a key and without its
/// signature being checked is never served: the guard lets such requests
/// through only for channels that check one. This holds a router built
/// without the guard closed too.
fn check_reached(st: &AppState, name: &str, caller: Option<&Caller>) -> Result<(), ApiError> {
    let signed = st.engine.channel(name).is_some_and(|c| c.callback_signed());
    if caller.is_none() && !signed {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this channel's callbacks are unsigned: they need the admin key",
        ));
    }
    Ok(())
}

/// How a channel's refusal of a callback is answered.
fn callback_refused(st: &AppState, name: &str, e: CallbackError) -> ApiError {
    match e {
        CallbackError::Unsupported => {
            let kind = st.engine.channel_kind(name).map_or("", |k| k.as_str());
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "unsupported",
                format!("channel {name:?} ({kind}) takes no signed callbacks"),
            )
        }
        CallbackError::Invalid(m) => ApiError::field("body", "invalid_body", m),
        CallbackError::Unauthorized(m) => {
            tracing::debug!(channel = name, reason = %m, "callback refused: not signed by the provider");
            ApiError::new(StatusCode::UNAUTHORIZED, "invalid_signature", m)
        }
    }
}

/// `GET /v1/channels/{name}/callback`: the provider's check of the server
/// URL (WeChat: `signature`, `timestamp`, `nonce`, `echostr`). Echoes
/// `echostr` as text when the signature is the channel's `callback_token`'s.
pub async fn handshake(
    State(st): State<AppState>,
    caller: Option<Extension<Caller>>,
    Path(name): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    check_reached(&st, &name, caller.as_deref())?;
    let Some(channel) = st.engine.channel(&name) else {
        return Err(ApiError::not_found("channel"));
    };
    let query = query_pairs(raw.as_deref());
    let req = CallbackRequest {
        query: &query,
        body: &[],
        now_s: st.clock.now_ms().div_euclid(1000),
    };
    match channel.callback_handshake(&req) {
        Ok(echo) => {
            tracing::info!(channel = %name, "provider verified the callback URL");
            Ok((
                [
                    (header::CONTENT_TYPE, HeaderValue::from_static("text/plain")),
                    (
                        header::X_CONTENT_TYPE_OPTIONS,
                        HeaderValue::from_static("nosniff"),
                    ),
                ],
                echo,
            )
                .into_response())
        }
        Err(CallbackError::Invalid(m)) => Err(ApiError::field("echostr", "invalid_field", m)),
        Err(e) => Err(callback_refused(&st, &name, e)),
    }
}

/// `POST /v1/channels/{name}/callback`: a provider's report about messages
/// it took earlier. The channel checks its signature when it has a
/// `callback_token`, then reads the body (for `wechat`, the
/// `TEMPLATESENDJOBFINISH` XML; for `aliyun_sms` and `tencent_sms`, their
/// JSON receipt arrays); each message it names gets its final status.
/// A refused request touches no store. Answers what the provider expects
/// (`success` for WeChat, its JSON for the SMS providers) once the
/// statuses are committed.
pub async fn callback(
    State(st): State<AppState>,
    caller: Option<Extension<Caller>>,
    Path(name): Path<String>,
    RawQuery(raw): RawQuery,
    body: Bytes,
) -> Result<Response, ApiError> {
    check_reached(&st, &name, caller.as_deref())?;
    if body.len() > CALLBACK_MAX_BYTES {
        return Err(ApiError::too_large(CALLBACK_MAX_BYTES));
    }
    let query = query_pairs(raw.as_deref());
    let req = CallbackRequest {
        query: &query,
        body: &body,
        now_s: st.clock.now_ms().div_euclid(1000),
    };
    let events = match st.engine.parse_callback(&name, &req) {
        None => return Err(ApiError::not_found("channel")),
        Some(Ok(events)) => events,
        Some(Err(CallbackError::Unsupported)) => {
            let kind = st.engine.channel_kind(&name).map_or("", |k| k.as_str());
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "unsupported",
                format!("channel {name:?} ({kind}) takes no callbacks"),
            ));
        }
        Some(Err(e)) => return Err(callback_refused(&st, &name, e)),
    };
    for ev in &events {
        record_final_status(&st, &name, ev).await?;
    }
    let reply = st
        .engine
        .channel(&name)
        .map(|c| c.callback_reply())
        .unwrap_or(herald_channels::CallbackReply {
            content_type: "text/plain",
            body: "success",
        });
    Ok(([(header::CONTENT_TYPE, reply.content_type)], reply.body).into_response())
}

/// Records one reported fate. The provider can call back before this node
/// has written the send-log row of the delivery (outcomes are recorded in
/// batches just after the answer), so a msgid not found yet is looked for
/// again for a few seconds.
async fn record_final_status(
    st: &AppState,
    channel: &str,
    ev: &CallbackEvent,
) -> Result<(), ApiError> {
    let (msgid, status) = (ev.provider_msgid.as_str(), ev.status.as_str());
    let mut updated = 0;
    for round in 0..CALLBACK_TRIES {
        updated = st
            .engine
            .store()
            .record_final_status(channel, msgid, status, st.clock.now_ms())
            .await
            .map_err(store_err)?;
        if updated > 0 || round + 1 == CALLBACK_TRIES {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(CALLBACK_RETRY_MS)).await;
    }
    if updated == 0 {
        tracing::warn!(
            channel,
            msgid,
            status,
            "delivery callback for a message this deployment has no record of"
        );
    }
    tracing::info!(channel, msgid, status, updated, "delivery callback");
    Ok(())
}

/// `POST /v1/deliveries/{id}:recall`: takes a delivered message back through
/// its channel (WeCom, within 24 h of the send). Only a delivery of the
/// tenant the caller acts for (the admin: `default`, or the one named in
/// `X-Herald-Tenant`).
pub async fn action(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(segment): Path<String>,
) -> Result<Response, ApiError> {
    let (raw_id, _recall) = split_action(&segment, "deliveries", "delivery", &["recall"])?;
    let id = parse_id(raw_id, "delivery")?;
    let store = st.engine.store();
    let d = mine(&caller, store.get_delivery(id).await?, "delivery")?;
    if d.final_status.as_deref() == Some(herald_store::FINAL_RECALLED) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "already_recalled",
            format!("delivery {id} was already recalled"),
        ));
    }
    let msgid = match (&d.outcome[..], &d.provider_msgid) {
        ("delivered", Some(m)) => m.clone(),
        _ => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "not_recallable",
                format!(
                    "delivery {id} is {:?} with no provider message id; only delivered messages can be recalled",
                    d.outcome
                ),
            ));
        }
    };
    match st.engine.recall(&d.channel, &msgid, d.finished_at).await {
        None => Err(ApiError::new(
            StatusCode::CONFLICT,
            "channel_unknown",
            format!("channel {:?} is not configured on this node", d.channel),
        )),
        Some(Err(RecallError::TooOld { window_hours })) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "recall_window_passed",
            format!(
                "delivery {id} was sent more than {window_hours} h ago; the provider only recalls messages younger than that"
            ),
        )),
        Some(Err(RecallError::Unsupported(_))) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "recall_unsupported",
            format!("channel {:?} cannot recall messages", d.channel),
        )),
        Some(Err(RecallError::Provider(m))) => Err(ApiError::new(
            StatusCode::BAD_GATEWAY,
            "provider_error",
            format!("the provider refused the recall: {m}"),
        )),
        Some(Ok(())) => {
            let now = st.clock.now_ms();
            store.mark_delivery_recalled(id, now).await?;
            Ok(axum::Json(RecalledJson {
                id,
                channel: d.channel,
                provider_msgid: Some(msgid),
                final_status: herald_store::FINAL_RECALLED.to_string(),
                recalled_at: now,
            })
            .into_response())
        }
    }
}
