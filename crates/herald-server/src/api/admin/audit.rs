//! `GET /v1/audit`: the audit log, newest first (oldest first with
//! `order=asc`), a page at a time, narrowed by key, route and status. The
//! admin sees every tenant (or the one `tenant=` names); any other key its
//! own tenant only.

use std::collections::HashMap;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Query, State};
use axum::response::{IntoResponse, Response};
use herald_core::TenantId;
use herald_core::time::{format_rfc3339_ms, parse_rfc3339_ms};
use herald_store::{AuditEntry, AuditFilter, AuditKey, AuditRoute, StoreError};
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
    #[serde(default)]
    order: Option<String>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    route: Option<String>,
    #[serde(default)]
    status: Option<String>,
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

/// `GET /v1/audit`'s answer: a page of entries, newest first (oldest first
/// with `order=asc`).
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
    let filter = AuditFilter {
        tenant,
        since,
        key: q.key.as_deref().map(key_filter).transpose()?,
        route: q.route.as_deref().map(route_filter).transpose()?,
        status: q.status.as_deref().map(status_filter).transpose()?,
        oldest_first: q.order.as_deref().map(oldest_first).transpose()? == Some(true),
    };
    let entries = store
        .list_audit(filter, after, limit as usize)
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

/// Longest `route=` taken: what the recorder keeps of a route.
const MAX_ROUTE_CHARS: usize = 256;
/// Longest `key=` name: a key's name is at most 64 characters.
const MAX_KEY_NAME_CHARS: usize = 64;

/// `order=`: `desc` (the default, newest first) or `asc`.
fn oldest_first(raw: &str) -> Result<bool, ApiError> {
    match raw.trim() {
        "desc" => Ok(false),
        "asc" => Ok(true),
        other => Err(ApiError::field(
            "order",
            "invalid_field",
            format!("order must be desc (newest first) or asc, not {other:?}"),
        )),
    }
}

/// `key=`: a key's id (digits), or the name entries record (`admin` for the
/// admin key).
fn key_filter(raw: &str) -> Result<AuditKey, ApiError> {
    let raw = raw.trim();
    let bad = || {
        ApiError::field(
            "key",
            "invalid_field",
            format!(
                "key must be a key's id or its name (1 to {MAX_KEY_NAME_CHARS} characters, \
                 without control characters)"
            ),
        )
    };
    // Digits that make a key id name that key; any other text (`0`, a
    // number past any id) is a name, which may simply match nothing.
    if !raw.is_empty()
        && raw.bytes().all(|b| b.is_ascii_digit())
        && let Some(id) = raw.parse::<i64>().ok().filter(|id| *id > 0)
    {
        return Ok(AuditKey::Id(id));
    }
    let chars = raw.chars().count();
    if chars == 0 || chars > MAX_KEY_NAME_CHARS || raw.chars().any(char::is_control) {
        return Err(bad());
    }
    Ok(AuditKey::Name(raw.to_string()))
}

/// `route=`: a recorded route, exactly (`/v1/jobs/{id}:cancel`), or every
/// route starting so with a final `*` (`/v1/jobs*`). `*` alone is the
/// route of folded refusal tallies.
fn route_filter(raw: &str) -> Result<AuditRoute, ApiError> {
    let raw = raw.trim();
    let bad = |why: &str| {
        ApiError::field(
            "route",
            "invalid_field",
            format!(
                "route must be a route pattern such as /v1/jobs/{{id}}:cancel, or a prefix ending in * such as /v1/jobs*: {why}"
            ),
        )
    };
    if raw == "*" {
        return Ok(AuditRoute::Exact(raw.to_string()));
    }
    if raw.strip_suffix('*').unwrap_or(raw).chars().count() > MAX_ROUTE_CHARS {
        return Err(bad("it is too long"));
    }
    if raw.chars().any(char::is_control) {
        return Err(bad("it holds a control character"));
    }
    match raw.strip_suffix('*') {
        Some(prefix) if prefix.starts_with('/') && !prefix.contains('*') => {
            Ok(AuditRoute::Prefix(prefix.to_string()))
        }
        None if raw.starts_with('/') && !raw.contains('*') => {
            Ok(AuditRoute::Exact(raw.to_string()))
        }
        _ => Err(bad("it must start with / and may hold one * at its end")),
    }
}

/// `status=`: one code (`404`) or a class (`4xx`), as an inclusive range.
fn status_filter(raw: &str) -> Result<(u16, u16), ApiError> {
    let raw = raw.trim();
    let bad = || {
        ApiError::field(
            "status",
            "invalid_field",
            format!(
                "status must be an HTTP status (100 to 599) or a class such as 4xx, not {raw:?}"
            ),
        )
    };
    let b = raw.as_bytes();
    if b.len() != 3 || !(b'1'..=b'5').contains(&b[0]) {
        return Err(bad());
    }
    let class = u16::from(b[0] - b'0') * 100;
    match &b[1..] {
        [b'x' | b'X', b'x' | b'X'] => Ok((class, class + 99)),
        [t, u] if t.is_ascii_digit() && u.is_ascii_digit() => {
            let code = class + u16::from(t - b'0') * 10 + u16::from(u - b'0');
            Ok((code, code))
        }
        _ => Err(bad()),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The field a refusal names, with its status.
    fn field_of(e: ApiError) -> (u16, Option<String>) {
        (e.status.as_u16(), e.body.field)
    }

    #[test]
    fn filters_read_what_they_say_and_refuse_the_rest() {
        assert_eq!(status_filter("404").ok(), Some((404, 404)));
        assert_eq!(status_filter("4xx").ok(), Some((400, 499)));
        assert_eq!(status_filter(" 2XX ").ok(), Some((200, 299)));
        for bad in [
            "", "4", "4x", "600", "099", "abc", "40x", "4xxx", "-1", "٤٠٤",
        ] {
            assert!(status_filter(bad).is_err(), "{bad:?}");
        }
        assert_eq!(key_filter("12").ok(), Some(AuditKey::Id(12)));
        assert_eq!(
            key_filter("ci bot").ok(),
            Some(AuditKey::Name("ci bot".into()))
        );
        assert_eq!(
            key_filter("admin").ok(),
            Some(AuditKey::Name("admin".into()))
        );
        // Digits that are no key id are a name (which matches nothing), as
        // the document's `key` (any label) allows.
        for name in ["0", "99999999999999999999"] {
            assert_eq!(key_filter(name).ok(), Some(AuditKey::Name(name.into())));
        }
        for bad in ["", " ", "a\u{7}b", &"k".repeat(65)] {
            assert!(key_filter(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            route_filter("/v1/jobs/{id}:cancel").ok(),
            Some(AuditRoute::Exact("/v1/jobs/{id}:cancel".into()))
        );
        assert_eq!(
            route_filter("/v1/jobs*").ok(),
            Some(AuditRoute::Prefix("/v1/jobs".into()))
        );
        assert_eq!(route_filter("*").ok(), Some(AuditRoute::Exact("*".into())));
        for bad in [
            "",
            "v1/jobs",
            "/v1/*/x",
            "/v1/**",
            "/a\nb",
            &format!("/{}", "r".repeat(300)),
        ] {
            assert!(route_filter(bad).is_err(), "{bad:?}");
        }
        assert_eq!(oldest_first("asc").ok(), Some(true));
        assert_eq!(oldest_first("desc").ok(), Some(false));
        assert!(oldest_first("up").is_err());
        for (e, field) in [
            (status_filter("x"), "status"),
            (key_filter("").map(|_| (0, 0)), "key"),
            (route_filter("x").map(|_| (0, 0)), "route"),
            (oldest_first("x").map(|_| (0, 0)), "order"),
        ] {
            let e = e.expect_err(field);
            assert_eq!(field_of(e), (400, Some(field.to_string())));
        }
    }
}
