//! The subscriber directory: `/v1/subscribers`. Each user of a tenant has a
//! profile (see `herald_core::subscriber`): addresses per channel type, time
//! zone, locale, preferences and quiet hours, checked here before the store
//! sees it.
//!
//! `PUT` replaces a profile; `PATCH` merges a JSON merge patch (RFC 7396)
//! into it, written only over the version it read, and read again when
//! another writer got there first.

pub(crate) mod docs;
pub(crate) mod grants;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use herald_core::TenantId;
use herald_core::subscriber::Profile;
use herald_core::time::format_rfc3339_ms;
use herald_store::{PutSubscriber, SubscriberRecord, WriteOp, WriteResult};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::access::Caller;
use crate::http::budget::BodyBudget;
use crate::http::bulk::{self, BulkRoute, LineResult};
use crate::http::document;
use crate::http::error::ApiError;
use crate::http::fields::check_id;
use crate::http::json_body;
use crate::http::request::{NoQuery, query, read_body};
use crate::http::state::AppState;

/// Subscribers per page when the query names no limit.
const DEFAULT_LIMIT: i64 = 100;
/// Most subscribers one page holds.
const MAX_LIMIT: i64 = 1000;
/// How many times a `PATCH` reads again after losing a race to another write.
const PATCH_ATTEMPTS: usize = 5;

/// A directory entry as the API shows it: the profile's fields, then the
/// entry's own.
/// (Its schema is `openapi::subscriber::SubscriberJson`: the profile's fields
/// are flattened in.)
#[derive(Serialize)]
pub(crate) struct SubscriberJson {
    user_id: String,
    #[serde(flatten)]
    profile: Value,
    /// Grows by one with every write.
    version: i64,
    created_at: String,
    updated_at: String,
}

impl SubscriberJson {
    pub(crate) fn new(r: SubscriberRecord) -> Self {
        // The store holds what was checked here: it parses. Should it not,
        // the entry shows with an empty profile rather than failing the page.
        let profile =
            serde_json::from_str(&r.profile).unwrap_or_else(|_| Value::Object(Map::new()));
        Self {
            user_id: r.user_id,
            profile,
            version: r.version,
            created_at: format_rfc3339_ms(r.created_at),
            updated_at: format_rfc3339_ms(r.updated_at),
        }
    }
}

/// A profile from JSON, checked: unknown fields, bad addresses, an unknown
/// time zone and the rest are refused with the field named.
fn profile_of(v: Value) -> Result<Profile, ApiError> {
    let profile: Profile = json_body::from_value(v).map_err(|e| {
        let path = e.path().to_string();
        let mut err = ApiError::field(&path, "invalid_field", e.into_inner().to_string());
        if path == "." || path.is_empty() {
            err.body.field = None;
        }
        err
    })?;
    profile
        .validate()
        .map_err(|e| ApiError::field(&e.field, "invalid_field", e.to_string()))?;
    Ok(profile)
}

/// The JSON object of a request body.
fn object_of(bytes: &[u8]) -> Result<Value, ApiError> {
    json_body::object::<Map<String, Value>>(bytes).map(Value::Object)
}

/// The stored form of a checked profile (its canonical JSON).
fn stored(profile: &Profile) -> Result<String, ApiError> {
    let text = serde_json::to_string(profile)
        .map_err(|e| ApiError::unavailable(format!("encoding a profile: {e}")))?;
    // Only `addresses.webhook` is free JSON; the path names what is wrong.
    document::check("", &text)?;
    Ok(text)
}

/// RFC 7396: objects merge key by key, `null` removes, anything else replaces.
fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(&k);
                } else {
                    merge(t.entry(k).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p,
    }
}

fn put_op(
    tenant: TenantId,
    user_id: String,
    profile: String,
    if_version: Option<i64>,
    at: i64,
) -> WriteOp {
    WriteOp::PutSubscriber(PutSubscriber {
        tenant,
        user_id,
        profile,
        if_version,
        at,
    })
}

fn unexpected() -> ApiError {
    ApiError::unavailable("the store answered a subscriber write with something else")
}

/// `PUT /v1/subscribers/{user_id}`: creates (`201`) or replaces (`200`).
pub async fn put(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(user_id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    check_id("user_id", &user_id)?;
    let bytes = read_body(body, st.api.max_timer_bytes).await?;
    let profile = profile_of(object_of(&bytes)?)?;
    let op = put_op(
        caller.tenant,
        user_id,
        stored(&profile)?,
        None,
        st.clock.now_ms(),
    );
    match st.engine.submit(vec![op]).await?.pop() {
        Some(WriteResult::SubscriberPut {
            subscriber,
            created,
        }) => {
            let status = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok((status, axum::Json(SubscriberJson::new(subscriber))).into_response())
        }
        _ => Err(unexpected()),
    }
}

/// `PATCH /v1/subscribers/{user_id}`: merges the body (a JSON merge patch)
/// into the stored profile; `404` when there is none.
pub async fn patch(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(user_id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    check_id("user_id", &user_id)?;
    let bytes = read_body(body, st.api.max_timer_bytes).await?;
    let patch = object_of(&bytes)?;
    let store = st.engine.store();
    for _ in 0..PATCH_ATTEMPTS {
        let Some(current) = store
            .get_subscribers(caller.tenant, std::slice::from_ref(&user_id))
            .await?
            .pop()
        else {
            return Err(ApiError::not_found("subscriber"));
        };
        let mut merged: Value =
            serde_json::from_str(&current.profile).unwrap_or_else(|_| Value::Object(Map::new()));
        merge(&mut merged, patch.clone());
        let profile = profile_of(merged)?;
        let op = put_op(
            caller.tenant,
            user_id.clone(),
            stored(&profile)?,
            Some(current.version),
            st.clock.now_ms(),
        );
        match st.engine.submit(vec![op]).await?.pop() {
            Some(WriteResult::SubscriberPut { subscriber, .. }) => {
                return Ok(axum::Json(SubscriberJson::new(subscriber)).into_response());
            }
            // Written meanwhile (or deleted): read again and merge over that.
            Some(WriteResult::VersionConflict { .. }) => continue,
            _ => return Err(unexpected()),
        }
    }
    Err(ApiError::new(
        StatusCode::CONFLICT,
        "conflict",
        "the subscriber kept changing while this patch was applied; try again",
    ))
}

/// `GET /v1/subscribers/{user_id}`.
pub async fn get(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(user_id): Path<String>,
) -> Result<Response, ApiError> {
    check_id("user_id", &user_id)?;
    match st
        .engine
        .store()
        .get_subscribers(caller.tenant, std::slice::from_ref(&user_id))
        .await?
        .pop()
    {
        Some(s) => Ok(axum::Json(SubscriberJson::new(s)).into_response()),
        None => Err(ApiError::not_found("subscriber")),
    }
}

/// `DELETE /v1/subscribers/{user_id}`: answers the entry as it was.
pub async fn delete(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Path(user_id): Path<String>,
) -> Result<Response, ApiError> {
    check_id("user_id", &user_id)?;
    let op = WriteOp::DeleteSubscriber {
        tenant: caller.tenant,
        user_id,
    };
    match st.engine.submit(vec![op]).await?.pop() {
        Some(WriteResult::SubscriberDeleted(s)) => {
            Ok(axum::Json(SubscriberJson::new(s)).into_response())
        }
        Some(WriteResult::NotFound) => Err(ApiError::not_found("subscriber")),
        _ => Err(unexpected()),
    }
}

/// `GET /v1/subscribers?cursor=&limit=` → `{subscribers, next_cursor}`: the
/// caller's directory in user-id order, 100 a page by default, at most 1,000.
pub async fn list(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<crate::http::pagination::CursorQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let (after, limit) = q.id_page(DEFAULT_LIMIT, MAX_LIMIT)?;
    let page = st
        .engine
        .store()
        .list_subscribers(caller.tenant, after, limit)
        .await?;
    let next_cursor = crate::http::pagination::next_cursor(
        page.len(),
        limit,
        page.last().map(|s| s.user_id.clone()),
    );
    let subscribers: Vec<SubscriberJson> = page.into_iter().map(SubscriberJson::new).collect();
    Ok(axum::Json(serde_json::json!({
        "subscribers": subscribers,
        "next_cursor": next_cursor,
    }))
    .into_response())
}

/// One answer line of `POST /v1/subscribers:bulk`.
#[derive(Serialize)]
struct BulkLine<'a> {
    #[serde(flatten)]
    result: LineResult<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<i64>,
}

/// The lines of `POST /v1/subscribers:bulk`: `{"user_id": ..., profile...}`.
struct SubscriberLines {
    tenant: TenantId,
    now: i64,
}

impl BulkRoute for SubscriberLines {
    type Item = (String, String);
    const CHARGED: bool = false;

    fn parse(&self, line: &[u8]) -> Result<(String, String), ApiError> {
        let mut v = object_of(line)?;
        let user_id = match v.as_object_mut().and_then(|o| o.remove("user_id")) {
            Some(Value::String(s)) => s,
            Some(_) => {
                return Err(ApiError::field(
                    "user_id",
                    "invalid_field",
                    "user_id must be a string",
                ));
            }
            None => {
                return Err(ApiError::field(
                    "user_id",
                    "invalid_field",
                    "missing field `user_id`",
                ));
            }
        };
        check_id("user_id", &user_id)?;
        let profile = profile_of(v)?;
        Ok((user_id, stored(&profile)?))
    }

    fn op(&self, (user_id, profile): (String, String)) -> WriteOp {
        put_op(self.tenant, user_id, profile, None, self.now)
    }

    fn answer(&self, line: usize, result: WriteResult, out: &mut Vec<u8>) -> bool {
        let answer = match &result {
            WriteResult::SubscriberPut {
                subscriber,
                created,
            } => BulkLine {
                result: LineResult::ok(line, if *created { 201 } else { 200 }),
                user_id: Some(&subscriber.user_id),
                version: Some(subscriber.version),
            },
            _ => {
                let e = unexpected();
                serde_json::to_writer(
                    &mut *out,
                    &BulkLine {
                        result: LineResult::refused(line, &e),
                        user_id: None,
                        version: None,
                    },
                )
                .ok();
                return false;
            }
        };
        serde_json::to_writer(out, &answer).ok();
        false
    }
}

/// `POST /v1/subscribers:bulk`: NDJSON, one `{"user_id", ...profile}` per
/// line, each creating or replacing that user's profile; answered per line
/// in order (`201` created, `200` replaced, or the line's error). Re-running
/// an import writes the same profiles again. See [`crate::http::bulk`] for the
/// limits.
pub async fn bulk(
    State(st): State<AppState>,
    _: NoQuery,
    Extension(caller): Extension<Caller>,
    Extension(budget): Extension<Arc<BodyBudget>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let route = SubscriberLines {
        tenant: caller.tenant,
        now: st.clock.now_ms(),
    };
    bulk::serve(&route, &st, caller.tenant, &budget, &headers, body).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_follows_rfc_7396() {
        let mut t = json!({"a": "b", "c": {"d": "e", "f": "g"}, "keep": 1});
        merge(
            &mut t,
            json!({"a": "z", "c": {"f": null, "h": [1]}, "new": true}),
        );
        assert_eq!(
            t,
            json!({"a": "z", "c": {"d": "e", "h": [1]}, "keep": 1, "new": true})
        );
        let mut t = json!({"a": [1, 2]});
        merge(&mut t, json!({"a": [3]}));
        assert_eq!(t, json!({"a": [3]}));
    }
}
