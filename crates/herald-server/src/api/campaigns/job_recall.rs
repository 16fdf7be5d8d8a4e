//! `POST /v1/jobs/{id}:recall`: takes back every message of a campaign that
//! the provider still lets us (WeCom: within 24 h of the send). A batching
//! provider sent up to 1,000 recipients under one message id, so the recall
//! goes message by message, and the answer counts recipients.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use herald_channels::RecallError;
use serde::Serialize;

use crate::http::error::ApiError;
use crate::http::state::AppState;

/// Most provider messages one recall request takes back (a WeCom campaign to
/// 10M recipients is 10,000 messages).
pub const MAX_RECALL_MESSAGES: usize = 20_000;

/// The answer: recipients by what happened to the message they got.
#[derive(Serialize, Default, utoipa::ToSchema)]
pub(crate) struct JobRecalled {
    pub job_id: i64,
    /// Provider messages looked at.
    pub messages: u64,
    /// Recipients whose message this request recalled.
    pub recalled: u64,
    /// Recipients whose message was recalled before.
    pub already_recalled: u64,
    /// Recipients whose message is past the provider's recall window.
    pub too_old: u64,
    /// Recipients whose message the provider refused to recall.
    pub failed: u64,
    /// The first refusal's text, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Recalls job `job_id` (already checked to be the caller's) on `channel`.
pub(crate) async fn recall_job(
    st: &AppState,
    job_id: i64,
    channel: &str,
) -> Result<Response, ApiError> {
    let store = st.engine.store();
    let messages = store.job_messages(job_id, MAX_RECALL_MESSAGES).await?;
    if messages.len() > MAX_RECALL_MESSAGES {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "too_many_messages",
            format!(
                "job {job_id} sent more than {MAX_RECALL_MESSAGES} provider messages; \
                 recall them one delivery at a time"
            ),
        ));
    }
    let mut out = JobRecalled {
        job_id,
        ..JobRecalled::default()
    };
    for m in messages {
        out.messages += 1;
        out.already_recalled += m.recalled;
        let open = m.sends.saturating_sub(m.recalled);
        if open == 0 {
            continue;
        }
        match st.engine.recall(channel, &m.msgid, m.sent_at).await {
            None => {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "channel_unknown",
                    format!("channel {channel:?} is not configured on this node"),
                ));
            }
            Some(Err(RecallError::Unsupported(_))) => {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "recall_unsupported",
                    format!("channel {channel:?} cannot recall messages"),
                ));
            }
            Some(Err(RecallError::TooOld { .. })) => out.too_old += open,
            Some(Err(RecallError::Provider(e))) => {
                tracing::warn!(job_id, channel, msgid = %m.msgid, error = %e, "recall refused");
                out.failed += open;
                out.error.get_or_insert(e);
            }
            Some(Ok(())) => {
                let marked = store
                    .mark_job_message_recalled(job_id, &m.msgid, st.clock.now_ms())
                    .await?;
                out.recalled += marked;
            }
        }
    }
    tracing::info!(
        job_id,
        channel,
        messages = out.messages,
        recalled = out.recalled,
        too_old = out.too_old,
        failed = out.failed,
        "job recalled"
    );
    Ok(axum::Json(out).into_response())
}
