//! `/v1/audiences`: streamed uploads of recipient ids (NDJSON or CSV).
//!
//! The body is never held whole: it is parsed frame by frame ([`parser`])
//! and handed to the engine's upload ([`herald_engine::campaign::AudienceUpload`]),
//! which writes one chunk while the next is parsed. Any bad line drops the
//! whole audience; nothing of a refused upload remains.

pub mod parser;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use herald_core::time::format_rfc3339_ms;
use herald_engine::campaign::AudienceUpload;
use herald_store::AudienceRecord;
use serde::{Deserialize, Serialize};

use crate::access::Caller;
use crate::http::budget::BodyBudget;
use crate::http::error::ApiError;
use crate::http::request::{NoQuery, parse_id, query};
use crate::http::state::AppState;
use crate::http::text::{Text, forbidden_control};
use parser::{Format, LineError, Parser};

/// What an upload holds at once, charged to the body budget: a frame, the
/// record being read, and the recipients parsed from a frame.
const UPLOAD_RESERVE: u64 = 1024 * 1024;

/// Longest audience name, in bytes.
pub const MAX_NAME_BYTES: usize = 200;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UploadQuery {
    #[serde(default)]
    name: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct AudienceJson {
    pub id: i64,
    pub name: Option<String>,
    /// `null` while the upload is still going.
    pub size: Option<u64>,
    pub created_at: String,
    /// In the upload's answer: recipients listed more than once, kept once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicates_removed: Option<u64>,
}

impl From<AudienceRecord> for AudienceJson {
    fn from(a: AudienceRecord) -> Self {
        Self {
            id: a.id,
            name: a.name,
            size: a.size,
            created_at: format_rfc3339_ms(a.created_at),
            duplicates_removed: None,
        }
    }
}

/// `POST /v1/audiences[?name=]`: streams NDJSON or CSV into a new audience.
/// `201 {id, name, size, created_at}`; a bad line is a 400 on `line N` and
/// leaves nothing behind.
pub async fn upload(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(budget): Extension<Arc<BodyBudget>>,
    headers: HeaderMap,
    q: Result<Query<UploadQuery>, QueryRejection>,
    body: Body,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    // Held until the answer: the upload streams, so its share is fixed.
    let _lease = match budget.lease(UPLOAD_RESERVE) {
        Ok(l) => l,
        Err(over) => return Ok(over.into_response()),
    };
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Some(format) = Format::from_content_type(ct) else {
        let mut e = ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!(
                "content-type {ct:?} is not accepted; send application/x-ndjson \
                 (one {{\"recipient\": \"...\"}} per line) or text/csv (recipient in the first column)"
            ),
        );
        e.body.field = Some("content-type".into());
        return Err(e);
    };
    if let Some(n) = &q.name
        && (n.is_empty() || n.len() > MAX_NAME_BYTES || forbidden_control(n, Text::Id).is_some())
    {
        return Err(ApiError::field(
            "name",
            "invalid_field",
            format!("name must be 1..={MAX_NAME_BYTES} bytes without control characters"),
        ));
    }
    let mut up = st
        .campaigns
        .start_upload(caller.tenant, q.name, st.api.audience_max_recipients)
        .await?;
    match ingest(&mut up, body, format).await {
        Ok(()) => {
            let duplicates = up.duplicates_removed();
            let a = up.finish().await?;
            let json = AudienceJson {
                duplicates_removed: Some(duplicates),
                ..AudienceJson::from(a)
            };
            Ok((StatusCode::CREATED, axum::Json(json)).into_response())
        }
        Err(e) => {
            up.abandon().await;
            Err(e)
        }
    }
}

/// Parses the body frame by frame into the upload.
async fn ingest(up: &mut AudienceUpload, body: Body, format: Format) -> Result<(), ApiError> {
    use http_body_util::BodyExt;
    let mut parser = Parser::new(format);
    let mut stream = body.into_data_stream();
    let line_err = |e: LineError| {
        ApiError::field(
            &format!("line {}", e.line),
            "invalid_line",
            format!("line {}: {}", e.line, e.message),
        )
    };
    loop {
        let frame = match stream.frame().await {
            None => break,
            Some(Ok(f)) => f,
            Some(Err(e)) => return Err(crate::http::request::body_error(&e)),
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let mut recipients = Vec::new();
        parser.push(&data, &mut recipients).map_err(line_err)?;
        up.push(recipients).await?;
    }
    let mut last = Vec::new();
    parser.finish(&mut last).map_err(line_err)?;
    up.push(last).await?;
    Ok(())
}

/// `GET /v1/audiences/{id}`.
pub async fn get(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw, "audience")?;
    let a = st.campaigns.get_audience(caller.tenant, id).await?;
    Ok(axum::Json(AudienceJson::from(a)).into_response())
}

/// `DELETE /v1/audiences/{id}` → `200` the audience as it was, its
/// recipients gone; `409 audience_in_use` while a job (finished or not) or a
/// rule names it.
pub async fn delete(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw, "audience")?;
    let a = st.campaigns.delete_audience(caller.tenant, id).await?;
    Ok(axum::Json(AudienceJson::from(a)).into_response())
}

/// Audiences per page when the query names no limit.
const DEFAULT_LIMIT: i64 = 100;
/// Most audiences one page holds.
const MAX_LIMIT: i64 = 1000;

/// `GET /v1/audiences`'s answer: a page of audiences by id.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct AudienceList {
    audiences: Vec<AudienceJson>,
    next_cursor: Option<String>,
}

/// `GET /v1/audiences?cursor=&limit=` → `{audiences, next_cursor}`: the
/// caller's audiences (open uploads too, `size: null`), oldest first, paged
/// by id through the `audiences_tenant` index. `next_cursor` is opaque, `null`
/// on the last page.
pub async fn list(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<crate::http::pagination::CursorQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let after = match q.cursor.as_deref() {
        None | Some("") => None,
        Some(c) => Some(c.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
            ApiError::field(
                "cursor",
                "invalid_field",
                "cursor is not one this listing gave",
            )
        })?),
    };
    let limit =
        crate::http::request::int_param("limit", &q.limit, 1..=MAX_LIMIT)?.unwrap_or(DEFAULT_LIMIT);
    let limit = limit as usize;
    let page = st
        .engine
        .store()
        .list_audiences(caller.tenant, after, limit)
        .await?;
    let next_cursor = (page.len() == limit)
        .then(|| page.last().map(|a| a.id.to_string()))
        .flatten();
    let audiences = page.into_iter().map(AudienceJson::from).collect();
    Ok(axum::Json(AudienceList {
        audiences,
        next_cursor,
    })
    .into_response())
}
