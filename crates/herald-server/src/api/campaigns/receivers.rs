//! How many recipients a rule's jobs are expected to send to
//! (`expected_receivers` on `GET /v1/rules/{id}`): the size of the audience
//! its current version sends to, or `null` with the reason when nobody can
//! tell before a job sends (parties and tags, which the provider expands
//! itself and never reports a size for).

use herald_core::TenantId;
use herald_store::RuleRecord;

use crate::http::error::ApiError;
use crate::http::state::AppState;
use serde::{Deserialize, Serialize};

/// Who a rule sends to. Kept as the request gave it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[derive(utoipa::ToSchema)]
pub struct AudienceTarget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parties: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience_id: Option<i64>,
}

/// The expected count, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expected {
    pub count: Option<u64>,
    pub reason: Option<&'static str>,
}

/// Parties or tags in an audience: their members are not known here.
pub(crate) const FANOUT_UNKNOWN: &str = "the audience names parties or tags, which the \
    channel's provider expands when a job sends and does not size beforehand";
/// An uploaded audience whose upload has not ended.
pub(crate) const UPLOAD_OPEN: &str = "the audience upload is not finished";

/// What the rule's audience (its JSON, as stored) and the size of the
/// audience its jobs send to (`None` while open) say.
pub(crate) fn expected(audience: &str, size: Option<u64>) -> Expected {
    // Read as the stored JSON (the rule's `AudienceTarget`), so this module
    // needs nothing of the rules module, which reads it.
    let named = |v: &serde_json::Value, key: &str| {
        v.get(key)
            .and_then(|l| l.as_array())
            .is_some_and(|l| !l.is_empty())
    };
    let fanout = serde_json::from_str::<serde_json::Value>(audience)
        .is_ok_and(|a| named(&a, "parties") || named(&a, "tags"));
    match (fanout, size) {
        (true, _) => Expected {
            count: None,
            reason: Some(FANOUT_UNKNOWN),
        },
        (false, Some(n)) => Expected {
            count: Some(n),
            reason: None,
        },
        (false, None) => Expected {
            count: None,
            reason: Some(UPLOAD_OPEN),
        },
    }
}

/// [`expected`] for `rule`'s current version, reading its audience's size.
pub(crate) async fn of_rule(
    st: &AppState,
    tenant: TenantId,
    rule: &RuleRecord,
) -> Result<Expected, ApiError> {
    let spec = &rule.current.spec;
    let size = match spec.audience_id {
        Some(id) => st.campaigns.get_audience(tenant, id).await?.size,
        None => None,
    };
    Ok(expected(&spec.audience, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_and_uploads_count_and_parties_or_tags_do_not() {
        assert_eq!(
            expected(r#"{"users":["a","b"]}"#, Some(2)),
            Expected {
                count: Some(2),
                reason: None
            }
        );
        assert_eq!(expected(r#"{"audience_id":4}"#, Some(10)).count, Some(10));
        assert_eq!(
            expected(r#"{"audience_id":4}"#, None).reason,
            Some(UPLOAD_OPEN)
        );
        for a in [r#"{"parties":["2"]}"#, r#"{"users":["a"],"tags":["7"]}"#] {
            assert_eq!(
                expected(a, Some(2)),
                Expected {
                    count: None,
                    reason: Some(FANOUT_UNKNOWN)
                },
                "{a}"
            );
        }
        assert_eq!(
            expected(r#"{"users":["a"],"parties":[]}"#, Some(1)).count,
            Some(1)
        );
    }
}
