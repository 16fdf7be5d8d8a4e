//! Tenants, API keys and the audit log.

use super::{Columns, Decode, Reader};
use crate::{ApiKeyRecord, AuditEntry, AuditFilter, AuditKey, AuditRoute, Result, StoreError};

/// An `api_keys` row, as [`ApiKeyRecord`] reads it.
macro_rules! api_key_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?;
            "id", "tenant_id", "name", "scopes", "hash", "created_at", "expires_at", "revoked_at")
    };
}
pub(crate) use api_key_cols;

/// An `audit_log` row, as [`AuditEntry`] reads it.
macro_rules! audit_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?;
            "id", "at", "key_id", "key_name", "tenant_id", "method", "route", "resource_id",
            "status", "count", "reason")
    };
}
pub(crate) use audit_cols;

/// Scopes as stored: one text of space-separated names. A name that would not
/// read back as itself (empty, or holding whitespace or a comma) is refused.
pub(crate) fn scopes_to_db(scopes: &[String]) -> Result<String> {
    if let Some(bad) = scopes
        .iter()
        .find(|s| s.is_empty() || s.contains(|c: char| c.is_whitespace() || c == ','))
    {
        return Err(StoreError::refused(
            "scopes",
            format!("{bad:?} is not a scope name (a word without spaces or commas)"),
        ));
    }
    Ok(scopes.join(" "))
}

/// The inverse of [`scopes_to_db`].
pub(crate) fn scopes_from_db(s: &str) -> Vec<String> {
    s.split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Where a page of the audit log starts, exclusive, in `(at, id)` order: just
/// before `since` (every id is above `i64::MIN`), or after the cursor's entry,
/// whichever is later.
pub(crate) fn audit_start(since: Option<i64>, cursor: Option<(i64, i64)>) -> (i64, i64) {
    let from_since = (since.unwrap_or(i64::MIN), i64::MIN);
    match cursor {
        Some(c) => c.max(from_since),
        None => from_since,
    }
}

/// The parameters of an audit page ([`crate::access::sql::audit_page`]),
/// in their order `$1`, `$2`, `$4` to `$10`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct AuditParams {
    /// Where the page starts, exclusive, in the listing's order.
    pub(crate) start: (i64, i64),
    pub(crate) since: i64,
    pub(crate) key_id: Option<i64>,
    pub(crate) key_name: Option<String>,
    pub(crate) route: Option<String>,
    pub(crate) route_prefix: Option<String>,
    pub(crate) status: (i32, i32),
}

impl AuditParams {
    /// The parameters of `filter`'s page after the cursor's entry (its `at`
    /// and id), if any.
    pub(crate) fn new(filter: &AuditFilter, cursor: Option<(i64, i64)>) -> Self {
        let start = if filter.oldest_first {
            audit_start(filter.since, cursor)
        } else {
            // Every id is below `i64::MAX`; `since` bounds the other end.
            cursor.unwrap_or((i64::MAX, i64::MAX))
        };
        let (key_id, key_name) = match &filter.key {
            None => (None, None),
            Some(AuditKey::Id(id)) => (Some(*id), None),
            Some(AuditKey::Name(name)) => (None, Some(name.clone())),
        };
        let (route, route_prefix) = match &filter.route {
            None => (None, None),
            Some(AuditRoute::Exact(r)) => (Some(r.clone()), None),
            Some(AuditRoute::Prefix(p)) => (None, Some(p.clone())),
        };
        let (lo, hi) = filter.status.unwrap_or((0, u16::MAX));
        AuditParams {
            start,
            since: filter.since.unwrap_or(i64::MIN),
            key_id,
            key_name,
            route,
            route_prefix,
            status: (i32::from(lo), i32::from(hi)),
        }
    }
}

impl Decode for ApiKeyRecord {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(ApiKeyRecord {
            id: r.int("api_keys.id")?,
            tenant: r.tenant("api_keys.tenant_id")?,
            name: r.opt_string("api_keys.name")?,
            scopes: scopes_from_db(&r.string("api_keys.scopes")?),
            hash: r.hash("api_keys.hash")?,
            created_at: r.int("api_keys.created_at")?,
            expires_at: r.opt_int("api_keys.expires_at")?,
            revoked_at: r.opt_int("api_keys.revoked_at")?,
        })
    }
}

impl Decode for AuditEntry {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(AuditEntry {
            id: r.int("audit_log.id")?,
            at: r.int("audit_log.at")?,
            key_id: r.opt_int("audit_log.key_id")?,
            key_name: r.opt_string("audit_log.key_name")?,
            tenant: r.tenant("audit_log.tenant_id")?,
            method: r.string("audit_log.method")?,
            route: r.string("audit_log.route")?,
            resource_id: r.opt_string("audit_log.resource_id")?,
            status: r.narrow("audit_log.status")?,
            count: r.narrow("audit_log.count")?,
            reason: r.opt_string("audit_log.reason")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_audit_page_starts_after_the_later_of_since_and_the_cursor() {
        assert_eq!(audit_start(None, None), (i64::MIN, i64::MIN));
        assert_eq!(audit_start(Some(5), None), (5, i64::MIN));
        assert_eq!(audit_start(Some(5), Some((7, 3))), (7, 3));
        assert_eq!(audit_start(Some(9), Some((7, 3))), (9, i64::MIN));
        assert_eq!(audit_start(Some(7), Some((7, 3))), (7, 3));
    }

    #[test]
    fn a_newest_first_page_starts_at_the_top_or_below_the_cursor() {
        let newest = AuditFilter {
            since: Some(5),
            status: Some((400, 499)),
            key: Some(AuditKey::Name("ci".into())),
            ..AuditFilter::default()
        };
        let p = AuditParams::new(&newest, None);
        assert_eq!((p.start, p.since), ((i64::MAX, i64::MAX), 5));
        assert_eq!((p.key_id, p.key_name.as_deref()), (None, Some("ci")));
        assert_eq!(p.status, (400, 499));
        assert_eq!(AuditParams::new(&newest, Some((7, 3))).start, (7, 3));
        let oldest = AuditFilter {
            oldest_first: true,
            ..newest
        };
        assert_eq!(AuditParams::new(&oldest, None).start, (5, i64::MIN));
        let any = AuditParams::new(&AuditFilter::default(), None);
        assert_eq!((any.since, any.status), (i64::MIN, (0, 65_535)));
    }

    #[test]
    fn scopes_round_trip_and_odd_names_are_refused() {
        let scopes = vec!["read".to_string(), "write".into()];
        assert_eq!(scopes_from_db(&scopes_to_db(&scopes).unwrap()), scopes);
        assert_eq!(
            scopes_from_db(&scopes_to_db(&[]).unwrap()),
            Vec::<String>::new()
        );
        for bad in ["", "a b", "a,b", "tab\t"] {
            assert!(matches!(
                scopes_to_db(&[bad.to_string()]),
                Err(StoreError::Refused { .. })
            ));
        }
    }
}
