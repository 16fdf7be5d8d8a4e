//! `GET /v1/audit`: the audit log, oldest first, a page at a time. The
//! admin sees every tenant (or the one `tenant=` names); any other key its
//! own tenant only.

use std::collections::HashMap;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Query, State};
use axum::response::{IntoResponse, Response};
use herald_core::TenantId;
use herald_core::time::{format_rfc3339_ms, parse_rfc3339_ms};
use herald_store::{AuditEntry, StoreError};
use serde::{Deserialize, Serialize};

use crate::access::Caller;
use crate::http::error::{ApiError, store_err};
use crate::http::request::{int_param, query};
use crate::http::state::AppState;

const DEFAULT_LIMIT: i64 = 100;
const MAX_LIMIT: i64 = 1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    #[serde(default)]
    tenant: Option<String>,
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    limit: Option<String>,
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct EntryJson {
    id: i64,
    at: String,
    key_id: Option<i64>,
    key_name: Option<String>,
    tenant: String,
    method: String,
    route: String,
    resource_id: Option<String>,
    status: u16,
    /// How many requests the entry stands for: 1, or a tally of refusals
    /// before any key was recognised (`at` is the first of them).
    count: u64,
    /// Why the tallied requests were refused (`no_key`, `invalid_key`,
    /// `invalid_session`, `malformed_authorization`, `misdirected_host`,
    /// `cross_origin`, `login_failed`, `public_route`); null for one request.
    reason: Option<String>,
}

impl EntryJson {
    fn new(e: AuditEntry, names: &HashMap<TenantId, String>) -> Self {
        Self {
            id: e.id,
            at: format_rfc3339_ms(e.at),
            key_id: e.key_id,
            key_name: e.key_name,
            tenant: tenant_label(e.tenant, names),
            method: e.method,
            route: e.route,
            resource_id: e.resource_id,
            status: e.status,
            count: e.count,
            reason: e.reason,
        }
    }
}

/// A tenant's name; its number if it has none (which the store prevents).
pub fn tenant_label(id: TenantId, names: &HashMap<TenantId, String>) -> String {
    names.get(&id).cloned().unwrap_or_else(|| id.to_string())
}

/// `GET /v1/audit`'s answer: a page of entries, oldest first.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct AuditList {
    entries: Vec<EntryJson>,
    next_cursor: Option<String>,
}

pub async fn list(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let store = st.engine.store();
    let tenant = read_scope(&st, &caller, q.tenant.as_deref(), "the audit").await?;
    let since = q
        .since
        .as_deref()
        .map(|s| {
            parse_rfc3339_ms(s.trim()).map_err(|e| {
                ApiError::field(
                    "since",
                    "invalid_field",
                    format!("since must be an RFC 3339 time: {e}"),
                )
            })
        })
        .transpose()?;
    let limit = int_param("limit", &q.limit, 1..=MAX_LIMIT)?.unwrap_or(DEFAULT_LIMIT);
    let after = int_param("cursor", &q.cursor, 1..=i64::MAX)?;
    let entries = store
        .list_audit(tenant, since, after, limit as usize)
        .await
        .map_err(|e| match e {
            StoreError::Refused { what, why } if what == "cursor" => {
                ApiError::field("cursor", "invalid_field", why)
            }
            e => store_err(e),
        })?;
    let names = tenant_names(&st).await?;
    let next_cursor = (entries.len() == limit as usize)
        .then(|| entries.last().map(|e| e.id.to_string()))
        .flatten();
    let entries = entries
        .into_iter()
        .map(|e| EntryJson::new(e, &names))
        .collect();
    Ok(axum::Json(AuditList {
        entries,
        next_cursor,
    })
    .into_response())
}

/// The tenant a read is confined to: a key's own (a `tenant=` naming another
/// is a `403`); for the admin every tenant (`None`) or the one `tenant=`
/// names. `what` is what is read, for the refusal.
pub async fn read_scope(
    st: &AppState,
    caller: &Caller,
    named: Option<&str>,
    what: &str,
) -> Result<Option<TenantId>, ApiError> {
    Ok(match (named, caller.admin) {
        (None, true) => None,
        (None, false) => Some(caller.tenant),
        (Some(name), _) if name == caller.tenant_name => Some(caller.tenant),
        (Some(_), false) => {
            return Err(crate::access::forbidden(format!(
                "a key reads {what} of its own tenant only; the admin reads every tenant's"
            )));
        }
        (Some(name), true) => Some(named_tenant(st, name).await?),
    })
}

/// Every tenant's name by id, to show names where the store keeps ids.
pub async fn tenant_names(st: &AppState) -> Result<HashMap<TenantId, String>, ApiError> {
    let tenants = st.engine.store().tenants().await.map_err(store_err)?;
    Ok(tenants.into_iter().collect())
}

/// The tenant a query names; one that does not exist is a `404`.
pub async fn named_tenant(st: &AppState, name: &str) -> Result<TenantId, ApiError> {
    let name = name.trim();
    if let Some(problem) = herald_core::tenant::tenant_name_problem(name) {
        return Err(ApiError::field("tenant", "invalid_field", problem));
    }
    st.engine
        .store()
        .tenant_id(name, false)
        .await
        .map_err(store_err)?
        .ok_or_else(|| ApiError::unknown_tenant("tenant", name))
}
