//! A subscriber's mini-program subscribe grants:
//! `POST|GET /v1/subscribers/{user_id}/grants` (see `herald_store::GrantStore`).
//!
//! The mini-program calls `wx.requestSubscribeMessage` when the user taps
//! a button; whatever the user allowed is recorded here, per channel (the
//! mini-program) and template: a one-time count, or a long-term
//! subscription. Each send on that channel spends one; WeChat keeps its own
//! count and never shows it, so this ledger is how Herald knows before
//! sending.

use axum::body::Body;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use herald_core::TenantId;
use herald_core::time::format_rfc3339_ms;
use herald_store::{
    GrantGiven, GrantRecord, GrantRecording, GrantsRecorded, MAX_GRANT_COUNT,
    MAX_GRANTS_PER_RECORDING, WriteOp, WriteResult,
};
use serde::{Deserialize, Serialize};

use crate::access::Caller;
use crate::http::error::ApiError;
use crate::http::fields::{check_id, check_word, unknown_channel};
use crate::http::json_body;
use crate::http::request::{NoQuery, read_body};
use crate::http::state::AppState;

/// Longest caller key and template id.
const MAX_KEY_BYTES: usize = 128;
/// Largest body `POST /v1/subscribers/{user_id}/grants` takes.
pub(crate) const GRANTS_MAX_BYTES: usize = 16 * 1024;

/// `POST /v1/subscribers/{user_id}/grants`: what one tap on "Allow" gave.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GrantsBody {
    /// The caller's key for this tap: the same key again changes nothing.
    pub key: String,
    /// The mini-program's channel (of kind `wechat_mini`).
    pub channel: String,
    /// One entry per template the user allowed (1 to 20).
    pub grants: Vec<GrantEntry>,
}

/// One template the user allowed.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GrantEntry {
    pub template_id: String,
    /// One-time grants (1 per tap); 1 when left out, none with `long_term`.
    #[serde(default)]
    pub count: Option<u32>,
    /// A long-term subscription (industries WeChat allows): every send goes.
    #[serde(default)]
    pub long_term: bool,
}

/// A user's grants of one template.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct GrantJson {
    channel: String,
    template_id: String,
    /// One-time grants left.
    remaining: i64,
    long_term: bool,
    /// One-time grants recorded in all.
    granted: i64,
    /// Sends that spent a grant.
    spent: i64,
    updated_at: String,
}

impl GrantJson {
    fn new(g: GrantRecord) -> Self {
        Self {
            channel: g.channel,
            template_id: g.template_id,
            remaining: g.remaining,
            long_term: g.long_term,
            granted: g.granted,
            spent: g.spent,
            updated_at: format_rfc3339_ms(g.updated_at),
        }
    }
}

/// The answer to a recording.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct GrantsRecordedJson {
    /// `false` when the key had been recorded before: nothing changed.
    recorded: bool,
    /// The user's grants on the channel now.
    grants: Vec<GrantJson>,
}

impl GrantsRecordedJson {
    pub(crate) fn new(r: GrantsRecorded) -> Self {
        Self {
            recorded: r.recorded,
            grants: r.grants.into_iter().map(GrantJson::new).collect(),
        }
    }
}

/// `GET /v1/subscribers/{user_id}/grants`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct GrantList {
    grants: Vec<GrantJson>,
}

/// The grant a "remind me" through a mini-program brings along
/// (`POST /v1/reminders` with `grant`): the reminder's channel is the
/// mini-program's.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReminderGrant {
    /// The caller's key for the tap.
    pub key: String,
    pub template_id: String,
    #[serde(default)]
    pub count: Option<u32>,
    #[serde(default)]
    pub long_term: bool,
}

/// Checks one tap's grants and makes the recording; `field` is where they
/// sit in the request (`grants`, `grant`).
pub(crate) fn recording(
    st: &AppState,
    tenant: TenantId,
    user_id: &str,
    (channel, channel_field): (&str, &str),
    key: &str,
    entries: Vec<(String, Option<u32>, bool)>,
    field: &str,
) -> Result<GrantRecording, ApiError> {
    check_word("key", key, MAX_KEY_BYTES, "_-.:@").map_err(|_| {
        ApiError::field(
            &key_field(field),
            "invalid_field",
            format!(
                "{} must be 1 to {MAX_KEY_BYTES} letters, digits or _-.:@",
                key_field(field)
            ),
        )
    })?;
    check_channel(st, tenant, channel, channel_field)?;
    if entries.is_empty() || entries.len() > MAX_GRANTS_PER_RECORDING {
        return Err(ApiError::field(
            field,
            "invalid_field",
            format!("{field} holds 1 to {MAX_GRANTS_PER_RECORDING} templates"),
        ));
    }
    let mut grants = Vec::with_capacity(entries.len());
    for (i, (template_id, count, long_term)) in entries.into_iter().enumerate() {
        let at = if field == "grant" {
            field.to_string()
        } else {
            format!("{field}[{i}]")
        };
        check_word(
            &format!("{at}.template_id"),
            &template_id,
            MAX_KEY_BYTES,
            "_-.",
        )?;
        let count = match (count, long_term) {
            (Some(n), true) if n > 0 => {
                return Err(ApiError::field(
                    &format!("{at}.count"),
                    "invalid_field",
                    "a long-term grant takes no count",
                ));
            }
            (_, true) => 0,
            (None, false) => 1,
            (Some(n), false) if (1..=MAX_GRANT_COUNT).contains(&n) => n,
            (Some(_), false) => {
                return Err(ApiError::field(
                    &format!("{at}.count"),
                    "invalid_field",
                    format!("count must be 1..={MAX_GRANT_COUNT}"),
                ));
            }
        };
        grants.push(GrantGiven {
            template_id,
            count,
            long_term,
        });
    }
    Ok(GrantRecording {
        tenant,
        user_id: user_id.to_string(),
        channel: channel.to_string(),
        key: key.to_string(),
        grants,
        at: st.clock.now_ms(),
    })
}

fn key_field(field: &str) -> String {
    if field == "grant" {
        "grant.key".into()
    } else {
        "key".into()
    }
}

/// A channel the caller may use, of kind `wechat_mini`.
fn check_channel(
    st: &AppState,
    tenant: TenantId,
    channel: &str,
    field: &str,
) -> Result<(), ApiError> {
    if !st.serves_channel(tenant, channel) {
        return Err(unknown_channel(
            field,
            channel,
            &st.channel_names_for(tenant),
        ));
    }
    match st.engine.channel_kind(channel) {
        Some(herald_channels::ChannelKind::WechatMini) => Ok(()),
        _ => Err(ApiError::field(
            field,
            "invalid_field",
            format!(
                "channel {channel:?} is not a wechat_mini channel: only mini-program subscribe messages take grants"
            ),
        )),
    }
}

/// `POST /v1/subscribers/{user_id}/grants` → `201` with the user's grants
/// on the channel, or `200` (and nothing changed) for a key recorded before.
pub async fn record(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(user_id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    check_id("user_id", &user_id)?;
    let bytes = read_body(body, GRANTS_MAX_BYTES).await?;
    let req: GrantsBody = json_body::object(&bytes)?;
    let entries = req
        .grants
        .into_iter()
        .map(|g| (g.template_id, g.count, g.long_term))
        .collect();
    let rec = recording(
        &st,
        caller.tenant,
        &user_id,
        (&req.channel, "channel"),
        &req.key,
        entries,
        "grants",
    )?;
    match st
        .engine
        .submit(vec![WriteOp::RecordGrants(rec)])
        .await?
        .pop()
    {
        Some(WriteResult::GrantsRecorded(r)) => {
            let status = if r.recorded {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok((status, axum::Json(GrantsRecordedJson::new(r))).into_response())
        }
        _ => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the store answered a grant recording with something else",
        )),
    }
}

/// `GET /v1/subscribers/{user_id}/grants` → every grant of the user, by
/// channel and template (empty for a user with none).
pub async fn list(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(user_id): Path<String>,
) -> Result<Response, ApiError> {
    check_id("user_id", &user_id)?;
    let grants = st
        .engine
        .store()
        .list_grants(caller.tenant, &user_id)
        .await?
        .into_iter()
        .map(GrantJson::new)
        .collect();
    Ok(axum::Json(GrantList { grants }).into_response())
}
