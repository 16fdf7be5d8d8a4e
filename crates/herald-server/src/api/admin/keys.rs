//! `/v1/keys`: the admin makes, lists and revokes API keys. A new key is
//! shown once, in the `201`; afterwards only its record is (never the
//! secret or its hash).

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use herald_core::TenantId;
use herald_core::time::{format_rfc3339_ms, parse_rfc3339_ms};
use herald_store::{ApiKeyRecord, NewApiKey};
use serde::{Deserialize, Serialize};

use crate::access::{KeySecret, Scopes};
use crate::api::admin::audit::{named_tenant, tenant_label, tenant_names};
use crate::audit::AuditedTenant;
use crate::http::error::{ApiError, store_err};
use crate::http::json_body;
use crate::http::pagination::ASCENDING;
use crate::http::request::{NoQuery, parse_id, query};
use crate::http::state::AppState;
use crate::http::text::{Text, forbidden_control};

/// Longest key name, in characters.
const MAX_NAME_CHARS: usize = 64;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[derive(utoipa::ToSchema)]
pub(crate) struct CreateKey {
    tenant: String,
    scopes: Vec<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    expires_at: Option<String>,
}

/// A key as listed: everything but the secret and its hash.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct KeyJson {
    id: i64,
    tenant: String,
    scopes: Vec<String>,
    name: Option<String>,
    created_at: String,
    expires_at: Option<String>,
    revoked_at: Option<String>,
}

impl KeyJson {
    fn new(k: ApiKeyRecord, names: &HashMap<TenantId, String>) -> Self {
        Self {
            id: k.id,
            tenant: tenant_label(k.tenant, names),
            scopes: k.scopes,
            name: k.name,
            created_at: format_rfc3339_ms(k.created_at),
            expires_at: k.expires_at.map(format_rfc3339_ms),
            revoked_at: k.revoked_at.map(format_rfc3339_ms),
        }
    }
}

/// `POST /v1/keys`: a key for a tenant (made if it does not exist yet).
pub async fn create(
    State(st): State<AppState>,
    _: NoQuery,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req: CreateKey = json_body::object(&body)?;
    let now = st.clock.now_ms();
    let tenant_name = req.tenant.trim().to_string();
    if let Some(problem) = herald_core::tenant::tenant_name_problem(&tenant_name) {
        return Err(ApiError::field("tenant", "invalid_field", problem));
    }
    if req.scopes.is_empty() {
        return Err(ApiError::field(
            "scopes",
            "invalid_field",
            "scopes must name at least one scope",
        ));
    }
    let scopes = Scopes::parse(req.scopes.iter().map(String::as_str))
        .map_err(|e| ApiError::field("scopes", "invalid_field", e))?;
    let name = match req.name {
        None => None,
        Some(n) => Some(check_name(n)?),
    };
    let expires_at = match req.expires_at.as_deref() {
        None => None,
        Some(raw) => {
            let at = parse_rfc3339_ms(raw.trim()).map_err(|e| {
                ApiError::field(
                    "expires_at",
                    "invalid_field",
                    format!("expires_at must be an RFC 3339 time: {e}"),
                )
            })?;
            if at <= now {
                return Err(ApiError::field(
                    "expires_at",
                    "invalid_field",
                    "expires_at must be in the future",
                ));
            }
            Some(at)
        }
    };
    let store = st.engine.store();
    let tenant = store
        .tenant_id(&tenant_name, true)
        .await
        .map_err(store_err)?
        .ok_or_else(|| {
            ApiError::from(herald_store::StoreError::Internal(
                "a tenant made on request was not found".into(),
            ))
        })?;
    let secret = KeySecret::generate();
    let record = store
        .create_api_key(NewApiKey {
            tenant,
            name,
            scopes: scopes.names().into_iter().map(String::from).collect(),
            hash: secret.hash(),
            created_at: now,
            expires_at,
        })
        .await
        .map_err(store_err)?;
    tracing::info!(
        key_id = record.id,
        tenant = %tenant_name,
        scopes = ?record.scopes,
        "API key created"
    );
    let names = HashMap::from([(tenant, tenant_name)]);
    let owner = AuditedTenant(tenant);
    let key = secret.key(record.id);
    let KeyJson {
        id,
        tenant,
        scopes,
        name,
        created_at,
        expires_at,
        revoked_at: _,
    } = KeyJson::new(record, &names);
    let created = KeyCreated {
        created_at,
        expires_at,
        id,
        key,
        name,
        scopes,
        tenant,
    };
    let mut resp = (StatusCode::CREATED, axum::Json(created)).into_response();
    // The one answer that holds a secret: keep it out of caches.
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // The key's tenant sees in its own audit log that it was given a key.
    resp.extensions_mut().insert(owner);
    Ok(resp)
}

/// The one answer that holds the secret key; it is never shown again.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct KeyCreated {
    created_at: String,
    expires_at: Option<String>,
    id: i64,
    key: String,
    name: Option<String>,
    scopes: Vec<String>,
    tenant: String,
}

/// A key name: 1 to 64 characters, none of them control characters.
fn check_name(name: String) -> Result<String, ApiError> {
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS || forbidden_control(&name, Text::Id).is_some() {
        return Err(ApiError::field(
            "name",
            "invalid_field",
            format!("name must be 1 to {MAX_NAME_CHARS} characters, without control characters"),
        ));
    }
    Ok(name)
}

/// `?tenant=&after=&limit=`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    #[serde(default)]
    tenant: Option<String>,
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    limit: Option<String>,
}

/// `GET /v1/keys`'s answer: a page of keys by id.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct KeyList {
    keys: Vec<KeyJson>,
    next_after: Option<i64>,
}

/// `GET /v1/keys?tenant=&after=&limit=` → `{keys, next_after}`: every key
/// (or a tenant's) by id, revoked and expired ones included.
pub async fn list(
    State(st): State<AppState>,
    q: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let page = ASCENDING.page(&q.after, &q.limit)?;
    let tenant = match &q.tenant {
        None => None,
        Some(name) => Some(named_tenant(&st, name).await?),
    };
    let store = st.engine.store();
    let keys = store
        .list_api_keys(tenant, page.cursor, page.limit)
        .await
        .map_err(store_err)?;
    let last = keys.last().map(|k| k.id);
    let names = tenant_names(&st).await?;
    let next_after = page.next_cursor(keys.len(), last);
    let keys = keys.into_iter().map(|k| KeyJson::new(k, &names)).collect();
    Ok(axum::Json(KeyList { keys, next_after }).into_response())
}

/// `DELETE /v1/keys/{id}`: revokes a key; revoking it again changes nothing.
pub async fn revoke(
    State(st): State<AppState>,
    _: NoQuery,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw, "key")?;
    let store = st.engine.store();
    let Some(record) = store
        .revoke_api_key(id, st.clock.now_ms())
        .await
        .map_err(store_err)?
    else {
        return Err(ApiError::not_found("key"));
    };
    // This node refuses it at once; the others within their cache lifetime.
    st.access.keys().forget(id);
    tracing::info!(key_id = id, "API key revoked");
    let names = tenant_names(&st).await?;
    let owner = AuditedTenant(record.tenant);
    let mut resp = axum::Json(KeyJson::new(record, &names)).into_response();
    // The key's tenant sees in its own audit log that its key was revoked.
    resp.extensions_mut().insert(owner);
    Ok(resp)
}
