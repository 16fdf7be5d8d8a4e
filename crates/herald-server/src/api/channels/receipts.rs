//! `POST /v1/receipts`: what an app, or a provider's callback relayed by
//! the caller, reports about a message after it was sent: `delivered`,
//! `read`, `clicked`. A campaign's receipts are counted per job (its totals
//! gain `delivered`, `read` and `clicked`), and a follow-up to "unread"
//! recipients is sent to those without a `read` receipt.
//!
//! A receipt names its send by `delivery_id` (a send-log row of a timer) or
//! by the idempotency key the recipient's message carried: a campaign send's
//! `herald-job-{job}-{index}`, a timer's own key (or `herald-timer-{id}`),
//! or one device's `{key}:d{hash}` of an app push.

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use herald_core::campaign::{SendState, parse_job_recipient_key, parse_timer_key};
use herald_core::time::parse_rfc3339_ms;
use herald_store::{DeliveryRecord, ReceiptEvent, ReceiptOn, SortOrder, TimerFilter};
use serde::{Deserialize, Serialize};

use crate::access::Caller;
use crate::http::body_limits::RECEIPT_MAX_BYTES;
use crate::http::error::ApiError;
use crate::http::json_body;
use crate::http::request::{NoQuery, read_body};
use crate::http::state::AppState;
use crate::http::tenancy::mine;
use crate::http::text::{Text, check_text};

/// How far ahead of this node's clock a reported `at` may be (clock skew of
/// the reporting app), before it is refused as wrong.
const MAX_FUTURE_MS: i64 = 5 * 60 * 1000;

/// The request body.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReceiptBody {
    /// A send-log row of a timer (`GET /v1/timers/{id}/deliveries`).
    #[serde(default)]
    delivery_id: Option<i64>,
    /// The idempotency key the message carried.
    #[serde(default)]
    idempotency_key: Option<String>,
    /// `delivered`, `read` or `clicked`.
    event: String,
    /// When it happened (RFC 3339); now when left out.
    #[serde(default)]
    at: Option<String>,
}

/// The answer.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct ReceiptJson {
    event: &'static str,
    /// `false` when this event was already recorded for this send (the
    /// first report counts; a repeat changes nothing).
    recorded: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    delivery_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    job_id: Option<i64>,
    /// The recipient's position in the job's audience.
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<u64>,
}

/// `POST /v1/receipts` → `200` [`ReceiptJson`]; `404` when the send is not
/// the caller's tenant's or does not exist, `409 not_delivered` when the
/// message was never delivered.
pub async fn record(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = read_body(body, RECEIPT_MAX_BYTES).await?;
    let req: ReceiptBody = json_body::object(&bytes)?;
    let event = ReceiptEvent::parse(&req.event).ok_or_else(|| {
        ApiError::field(
            "event",
            "invalid_field",
            format!(
                "{:?} is not an event; use delivered, read or clicked",
                req.event
            ),
        )
    })?;
    let now = st.clock.now_ms();
    let at = match &req.at {
        None => now,
        Some(s) => {
            let at = parse_rfc3339_ms(s).map_err(|e| ApiError::field("at", "invalid_field", e))?;
            if at > now.saturating_add(MAX_FUTURE_MS) {
                return Err(ApiError::field(
                    "at",
                    "invalid_field",
                    "at is more than 5 minutes in the future",
                ));
            }
            at
        }
    };
    let on = match (req.delivery_id, req.idempotency_key.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(ApiError::field(
                "delivery_id",
                "invalid_field",
                "give either delivery_id or idempotency_key, not both",
            ));
        }
        (None, None) => {
            return Err(ApiError::field(
                "delivery_id",
                "missing_field",
                "give delivery_id or idempotency_key",
            ));
        }
        (Some(id), None) => {
            let d = mine(
                &caller,
                st.engine.store().get_delivery(id).await?,
                "delivery",
            )?;
            delivered(&d)?;
            ReceiptOn::Delivery(d.id)
        }
        (None, Some(key)) => {
            check_text("idempotency_key", key, Text::Id)?;
            by_key(&st, &caller, key).await?
        }
    };
    let recorded = st.engine.store().record_receipt(on, event, at).await?;
    tracing::info!(event = event.as_str(), ?on, recorded, "receipt");
    let (delivery_id, job_id, index) = match on {
        ReceiptOn::Delivery(id) => (Some(id), None, None),
        ReceiptOn::JobSend { job_id, idx } => (None, Some(job_id), Some(idx)),
    };
    let body = ReceiptJson {
        event: event.as_str(),
        recorded,
        delivery_id,
        job_id,
        index,
    };
    Ok((StatusCode::OK, axum::Json(body)).into_response())
}

/// The send an idempotency key names, if it is the caller's and delivered.
async fn by_key(st: &AppState, caller: &Caller, key: &str) -> Result<ReceiptOn, ApiError> {
    if let Some((job_id, idx)) = parse_job_recipient_key(key) {
        // Answers 404 for another tenant's job.
        st.campaigns.get_job(caller.tenant, job_id).await?;
        let send = st
            .campaigns
            .job_sends(caller.tenant, job_id, idx, idx.saturating_add(1))
            .await?
            .into_iter()
            .next();
        return match send {
            Some(s) if s.state == SendState::Delivered => Ok(ReceiptOn::JobSend { job_id, idx }),
            _ => Err(not_delivered(format!(
                "recipient {idx} of job {job_id} has no delivered message"
            ))),
        };
    }
    // One device of an app push carries `{key}:d{hash}`: its timer is the
    // key's, and the receipt is that device's row.
    let timer_key = match key.rsplit_once(":d") {
        Some((base, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            base
        }
        _ => key,
    };
    // A later step of a fallback route carries `{key}:s{step}`: its timer
    // is the key's too (unless a timer has the whole key as its own), and
    // the receipt is that step's row.
    let stepped = match timer_key.rsplit_once(":s") {
        Some((base, step))
            if !step.is_empty() && step.len() <= 2 && step.bytes().all(|b| b.is_ascii_digit()) =>
        {
            Some(base)
        }
        _ => None,
    };
    let store = st.engine.store();
    let mut timer = timer_by_key(st, caller, timer_key).await?;
    let mut timer_key = timer_key;
    if timer.is_none()
        && let Some(base) = stepped
    {
        timer = timer_by_key(st, caller, base).await?;
        timer_key = base;
    }
    let timer = mine(caller, timer, "timer")?;
    let rows = store.deliveries_for(timer.id).await?;
    let exact = timer_key.len() != key.len();
    let row = rows
        .iter()
        .rev()
        .filter(|d| !exact || d.idempotency_key == key)
        .find(|d| d.outcome == "delivered")
        .ok_or_else(|| not_delivered(format!("no delivered message carries the key {key:?}")))?;
    Ok(ReceiptOn::Delivery(row.id))
}

/// The timer a key names: Herald's own `herald-timer-{id}`, or a caller's.
async fn timer_by_key(
    st: &AppState,
    caller: &Caller,
    key: &str,
) -> Result<Option<herald_store::TimerRecord>, ApiError> {
    let store = st.engine.store();
    Ok(match parse_timer_key(key) {
        Some(id) => store.get_timer(id).await?,
        None => {
            let filter = TimerFilter {
                idempotency_key: Some(key.to_string()),
                ..TimerFilter::default()
            };
            store
                .search_timers(caller.tenant, &filter, None, 1, SortOrder::Asc)
                .await?
                .into_iter()
                .next()
        }
    })
}

fn delivered(d: &DeliveryRecord) -> Result<(), ApiError> {
    if d.outcome == "delivered" {
        Ok(())
    } else {
        Err(not_delivered(format!(
            "delivery {} is {:?}; only a delivered message takes receipts",
            d.id, d.outcome
        )))
    }
}

fn not_delivered(message: String) -> ApiError {
    ApiError::new(StatusCode::CONFLICT, "not_delivered", message)
}
