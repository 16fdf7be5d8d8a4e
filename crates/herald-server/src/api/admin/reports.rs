//! `GET /v1/reports`: delivery outcomes the store has counted, per UTC day,
//! tenant, channel, outcome, rule and job, grouped and filtered as asked.
//! Unlike `/v1/channels` (this node, since it started) they are
//! cluster-wide, survive restarts, and outlive the send-log rows retention
//! deletes. A key sees its own tenant's counts; the admin every tenant's (or
//! the one `tenant=` names).

use std::collections::HashMap;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Query, State};
use axum::response::{IntoResponse, Response};
use herald_core::TenantId;
use herald_core::time::{format_utc_day, parse_utc_day};
use herald_store::{MAX_REPORT_ROWS, ReportDim, ReportQuery, ReportRow};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::access::Caller;
use crate::api::admin::audit::{read_scope, tenant_label, tenant_names};
use crate::http::error::{ApiError, store_err};
use crate::http::request::{int_param, query};
use crate::http::state::AppState;

/// What a report groups by when the query does not say.
pub const DEFAULT_GROUP_BY: [ReportDim; 3] =
    [ReportDim::Day, ReportDim::Channel, ReportDim::Outcome];
const DEFAULT_LIMIT: i64 = 1_000;
/// The longest channel or outcome name a filter takes.
const MAX_NAME: usize = 128;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportParams {
    #[serde(default)]
    group_by: Option<String>,
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    tenant: Option<String>,
    #[serde(default)]
    channel: Option<String>,
    #[serde(default)]
    outcome: Option<String>,
    #[serde(default)]
    rule: Option<String>,
    #[serde(default)]
    job: Option<String>,
    #[serde(default)]
    limit: Option<String>,
}

/// `group_by=channel,day`: known names, each once, in the order given.
pub fn parse_group_by(raw: Option<&str>) -> Result<Vec<ReportDim>, ApiError> {
    let Some(raw) = raw.map(str::trim) else {
        return Ok(DEFAULT_GROUP_BY.to_vec());
    };
    let mut dims = Vec::new();
    for name in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let dim = ReportDim::parse(name).ok_or_else(|| {
            let known: Vec<&str> = ReportDim::ALL.iter().map(|d| d.as_str()).collect();
            ApiError::field(
                "group_by",
                "invalid_field",
                format!(
                    "group_by: unknown {name:?}; expected any of {}",
                    known.join(", ")
                ),
            )
        })?;
        if dims.contains(&dim) {
            return Err(ApiError::field(
                "group_by",
                "invalid_field",
                format!("group_by names {name:?} twice"),
            ));
        }
        dims.push(dim);
    }
    Ok(dims)
}

fn day_param(name: &str, raw: &Option<String>) -> Result<Option<i64>, ApiError> {
    raw.as_deref()
        .map(|s| {
            parse_utc_day(s.trim())
                .map_err(|e| ApiError::field(name, "invalid_field", format!("{name} {s:?}: {e}")))
        })
        .transpose()
}

fn name_param(name: &str, raw: &Option<String>) -> Result<Option<String>, ApiError> {
    let Some(s) = raw.as_deref().map(str::trim) else {
        return Ok(None);
    };
    if s.is_empty() || s.len() > MAX_NAME || s.chars().any(char::is_control) {
        return Err(ApiError::field(
            name,
            "invalid_field",
            format!("{name} must be 1..={MAX_NAME} printable characters"),
        ));
    }
    Ok(Some(s.to_string()))
}

pub async fn report(
    State(st): State<AppState>,
    Extension(caller): Extension<Caller>,
    q: Result<Query<ReportParams>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let group_by = parse_group_by(q.group_by.as_deref())?;
    let from_day = day_param("from", &q.from)?;
    let to_day = day_param("to", &q.to)?;
    if let (Some(f), Some(t)) = (from_day, to_day)
        && f > t
    {
        return Err(ApiError::field(
            "to",
            "invalid_field",
            "to is a day before from",
        ));
    }
    let tenant = read_scope(&st, &caller, q.tenant.as_deref(), "the reports").await?;
    let limit = int_param("limit", &q.limit, 1..=MAX_REPORT_ROWS as i64)?.unwrap_or(DEFAULT_LIMIT);
    let query = ReportQuery {
        group_by: group_by.clone(),
        from_day,
        to_day,
        tenant,
        channel: name_param("channel", &q.channel)?,
        outcome: name_param("outcome", &q.outcome)?,
        rule: int_param("rule", &q.rule, 1..=i64::MAX)?,
        job: int_param("job", &q.job, 1..=i64::MAX)?,
        // One more than asked: says whether the answer was cut short.
        limit: limit as usize + 1,
    };
    let mut rows = st.engine.store().report(query).await.map_err(store_err)?;
    let truncated = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let names = if group_by.contains(&ReportDim::Tenant) {
        tenant_names(&st).await?
    } else {
        HashMap::new()
    };
    let total: u64 = rows.iter().map(|r| r.count).sum();
    let rows = rows
        .into_iter()
        .map(|r| row_json(&group_by, r, &names))
        .collect();
    Ok(axum::Json(ReportJson {
        group_by: group_by.iter().map(|d| d.as_str()).collect(),
        from: from_day.map(format_utc_day),
        to: to_day.map(format_utc_day),
        rows,
        total,
        truncated,
    })
    .into_response())
}

// The outer `Option` says whether a key is there; the inner one is its `null`.
/// One group of a report: only the keys grouped by appear.
#[derive(Serialize, ToSchema, Default)]
pub(crate) struct ReportRowJson {
    /// The tenant's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    tenant: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    channel: Option<Option<String>>,
    /// `delivered`, `retry`, `failed`, `dead`, `throttled`, `deferred`,
    /// `no_address`, `opted_out`, `expired` (timers); `delivered`, `retry`, `failed` (campaigns).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    outcome: Option<Option<String>>,
    /// UTC day, `YYYY-MM-DD`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    day: Option<Option<String>>,
    /// `null`: not sent by a rule's job (timers, jobs made directly).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<i64>)]
    rule: Option<Option<i64>>,
    /// `null`: not sent by a job (timers).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<i64>)]
    job: Option<Option<i64>>,
    /// Send-log rows counted: attempts for timers, recorded outcomes for
    /// campaign recipients.
    count: u64,
}

/// `GET /v1/reports`.
#[derive(Serialize, ToSchema)]
#[schema(as = Report)]
pub(crate) struct ReportJson {
    group_by: Vec<&'static str>,
    /// The first day counted, if the query named one.
    from: Option<String>,
    /// The last day counted, if the query named one.
    to: Option<String>,
    /// One per group, in group order.
    rows: Vec<ReportRowJson>,
    /// The sum of the rows' counts.
    total: u64,
    /// More groups matched than `limit`.
    truncated: bool,
}

/// One group: its keys (a day as `2026-11-26`, a tenant by name, no rule or
/// job as `null`) and its `count`.
fn row_json(
    group_by: &[ReportDim],
    r: ReportRow,
    names: &HashMap<TenantId, String>,
) -> ReportRowJson {
    let mut out = ReportRowJson {
        count: r.count,
        ..ReportRowJson::default()
    };
    for d in group_by {
        match d {
            ReportDim::Tenant => out.tenant = Some(r.tenant.map(|t| tenant_label(t, names))),
            ReportDim::Channel => out.channel = Some(r.channel.clone()),
            ReportDim::Outcome => out.outcome = Some(r.outcome.clone()),
            ReportDim::Day => out.day = Some(r.day.map(format_utc_day)),
            ReportDim::Rule => out.rule = Some(r.rule.flatten()),
            ReportDim::Job => out.job = Some(r.job.flatten()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_by_takes_known_names_once_in_order() {
        assert_eq!(
            parse_group_by(Some("channel, day")).unwrap(),
            [ReportDim::Channel, ReportDim::Day]
        );
        assert_eq!(parse_group_by(None).unwrap(), DEFAULT_GROUP_BY);
        assert!(parse_group_by(Some("")).unwrap().is_empty(), "a total");
        for bad in ["channel,week", "day,day"] {
            let e = parse_group_by(Some(bad)).unwrap_err();
            assert_eq!(e.body.field.as_deref(), Some("group_by"), "{bad}");
        }
    }
}
