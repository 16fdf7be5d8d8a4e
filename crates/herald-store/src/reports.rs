//! Stored reports: delivery outcomes counted per UTC day, tenant, channel,
//! outcome, rule and job (`report_counts`, migration 0021).
//!
//! Counts are added in the transaction that writes the send log (a timer's
//! attempt in `complete`, a campaign recipient's in `record_sends`), summed
//! per key in memory first so that a batch costs one upsert per distinct key.
//! A crash loses both or neither, so nothing is counted twice. Retention never
//! deletes them: they outlive the send-log rows they count. The backends'
//! `reports` modules hold the writes; the query is built here for both.

use std::collections::BTreeMap;

use herald_core::TenantId;
use herald_core::campaign::SendState;
use herald_core::time::utc_day;

use crate::Completion;

/// The most rows one report answers.
pub const MAX_REPORT_ROWS: usize = 10_000;

/// What a report can be grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReportDim {
    Tenant,
    Channel,
    Outcome,
    Day,
    Rule,
    Job,
}

impl ReportDim {
    pub const ALL: [ReportDim; 6] = [
        ReportDim::Tenant,
        ReportDim::Channel,
        ReportDim::Outcome,
        ReportDim::Day,
        ReportDim::Rule,
        ReportDim::Job,
    ];

    /// The dimension's name in `group_by`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportDim::Tenant => "tenant",
            ReportDim::Channel => "channel",
            ReportDim::Outcome => "outcome",
            ReportDim::Day => "day",
            ReportDim::Rule => "rule",
            ReportDim::Job => "job",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.as_str() == s)
    }

    fn column(self) -> &'static str {
        match self {
            ReportDim::Tenant => "tenant_id",
            ReportDim::Channel => "channel",
            ReportDim::Outcome => "outcome",
            ReportDim::Day => "day",
            ReportDim::Rule => "rule_id",
            ReportDim::Job => "job_id",
        }
    }
}

/// Which counts a report sums, and how it groups them. Every filter that is
/// `Some` must match; days are [`utc_day`]s, both ends included.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReportQuery {
    pub group_by: Vec<ReportDim>,
    pub from_day: Option<i64>,
    pub to_day: Option<i64>,
    pub tenant: Option<TenantId>,
    pub channel: Option<String>,
    pub outcome: Option<String>,
    pub rule: Option<i64>,
    pub job: Option<i64>,
    /// At most this many rows (in group order).
    pub limit: usize,
}

/// One group of a report: the values of the dimensions grouped by (`None`
/// for the others) and the sum of its counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReportRow {
    pub tenant: Option<TenantId>,
    pub channel: Option<String>,
    pub outcome: Option<String>,
    pub day: Option<i64>,
    /// Grouped by rule: `Some(None)` counts what no rule sent (timers).
    pub rule: Option<Option<i64>>,
    /// Grouped by job: `Some(None)` counts what no job sent (timers).
    pub job: Option<Option<i64>>,
    pub count: u64,
}

/// The key of one `report_counts` row. `rule` and `job` are 0 for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct CountKey<'a> {
    pub day: i64,
    pub tenant: TenantId,
    pub channel: &'a str,
    pub outcome: &'static str,
    pub rule: i64,
    pub job: i64,
}

/// A batch of timer outcomes summed per key, in key order (the order the
/// upserts take their row locks, so two writers never wait on each other in
/// a cycle). Every completion counts: each is a send-log row.
pub(crate) fn tally_completions(batch: &[Completion]) -> BTreeMap<CountKey<'_>, i64> {
    let mut out = BTreeMap::new();
    for c in batch {
        let key = CountKey {
            day: utc_day(c.finished_at),
            tenant: c.tenant,
            channel: &c.channel,
            outcome: c.outcome.as_str(),
            rule: 0,
            job: 0,
        };
        *out.entry(key).or_insert(0) += 1;
    }
    out
}

/// The campaign outcomes one `record_sends` wrote to the send log (a new
/// row, or a `retry` row that took a new outcome), summed per outcome.
#[derive(Debug, Default)]
pub(crate) struct SendTally(BTreeMap<&'static str, i64>);

impl SendTally {
    pub fn add(&mut self, state: SendState) {
        *self.0.entry(state.as_str()).or_insert(0) += 1;
    }

    /// `(outcome, count)`, in outcome order.
    pub fn counts(&self) -> impl Iterator<Item = (&'static str, i64)> + '_ {
        self.0.iter().map(|(o, n)| (*o, *n))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The report statement for `group_by`, with `$N` placeholders: $1 from day,
/// $2 to day, $3 tenant, $4 channel, $5 outcome, $6 rule, $7 job (each NULL
/// for no filter), $8 the row limit. Columns, always: tenant, channel,
/// outcome, day, rule, job (NULL when not grouped by) and the count. Only
/// [`ReportDim`] names reach the text.
pub(crate) fn select_sql(group_by: &[ReportDim]) -> String {
    let column = |d: ReportDim, ty: &str| {
        if group_by.contains(&d) {
            format!("CAST({} AS {ty})", d.column())
        } else {
            format!("CAST(NULL AS {ty})")
        }
    };
    let columns = [
        column(ReportDim::Tenant, "BIGINT"),
        column(ReportDim::Channel, "TEXT"),
        column(ReportDim::Outcome, "TEXT"),
        column(ReportDim::Day, "BIGINT"),
        column(ReportDim::Rule, "BIGINT"),
        column(ReportDim::Job, "BIGINT"),
    ]
    .join(", ");
    let mut sql = format!(
        "SELECT {columns}, CAST(COALESCE(SUM(count), 0) AS BIGINT) FROM report_counts \
         WHERE (CAST($1 AS BIGINT) IS NULL OR day >= CAST($1 AS BIGINT)) \
           AND (CAST($2 AS BIGINT) IS NULL OR day <= CAST($2 AS BIGINT)) \
           AND (CAST($3 AS BIGINT) IS NULL OR tenant_id = CAST($3 AS BIGINT)) \
           AND (CAST($4 AS TEXT) IS NULL OR channel = CAST($4 AS TEXT)) \
           AND (CAST($5 AS TEXT) IS NULL OR outcome = CAST($5 AS TEXT)) \
           AND (CAST($6 AS BIGINT) IS NULL OR rule_id = CAST($6 AS BIGINT)) \
           AND (CAST($7 AS BIGINT) IS NULL OR job_id = CAST($7 AS BIGINT))"
    );
    if !group_by.is_empty() {
        let cols: Vec<&str> = group_by.iter().map(|d| d.column()).collect();
        let cols = cols.join(", ");
        sql.push_str(&format!(" GROUP BY {cols} ORDER BY {cols}"));
    }
    sql.push_str(" LIMIT CAST($8 AS BIGINT)");
    sql
}

/// The filters of `q` in [`select_sql`]'s parameter order ($1..$7), as both
/// backends bind them.
pub(crate) struct ReportParams {
    pub from_day: Option<i64>,
    pub to_day: Option<i64>,
    pub tenant: Option<i64>,
    pub channel: Option<String>,
    pub outcome: Option<String>,
    pub rule: Option<i64>,
    pub job: Option<i64>,
    pub limit: i64,
}

impl ReportParams {
    pub fn new(q: &ReportQuery) -> Self {
        Self {
            from_day: q.from_day,
            to_day: q.to_day,
            tenant: q.tenant.map(|t| i64::from(t.0)),
            channel: q.channel.clone(),
            outcome: q.outcome.clone(),
            rule: q.rule,
            job: q.job,
            limit: crate::model::limit_to_db(q.limit.min(MAX_REPORT_ROWS)),
        }
    }
}

/// A row of [`select_sql`] as read: the six dimension columns and the count.
pub(crate) type RawRow = (
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    i64,
);

/// Turns a read row into a [`ReportRow`]; an ungrouped report over nothing
/// (one row counting 0) is no row.
pub(crate) fn decode_row(group_by: &[ReportDim], raw: RawRow) -> crate::Result<Option<ReportRow>> {
    let (tenant, channel, outcome, day, rule, job, count) = raw;
    if group_by.is_empty() && count == 0 {
        return Ok(None);
    }
    let tenant = tenant
        .map(|t| {
            u32::try_from(t)
                .map(TenantId)
                .map_err(|_| crate::StoreError::Corrupt(format!("report_counts.tenant_id {t}")))
        })
        .transpose()?;
    // 0 is "none": what a timer sent came from no rule and no job.
    let some = |id: i64| (id != 0).then_some(id);
    Ok(Some(ReportRow {
        tenant,
        channel,
        outcome,
        day,
        rule: rule.map(some),
        job: job.map(some),
        count: crate::model::from_db(count, "report_counts.count")?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_dimensions_grouped_by_are_read_grouped_and_ordered() {
        let sql = select_sql(&[ReportDim::Day, ReportDim::Channel]);
        assert!(
            sql.contains("GROUP BY day, channel ORDER BY day, channel"),
            "{sql}"
        );
        assert!(
            sql.contains("CAST(NULL AS BIGINT), CAST(channel AS TEXT)"),
            "{sql}"
        );
        let total = select_sql(&[]);
        assert!(!total.contains("GROUP BY"), "{total}");
    }

    #[test]
    fn a_batch_costs_one_count_per_distinct_key() {
        let c = |channel: &str, outcome, at| Completion {
            timer_id: 1,
            tenant: herald_core::DEFAULT_TENANT,
            attempt: 1,
            outcome,
            channel: channel.into(),
            idempotency_key: "k".into(),
            provider_msgid: None,
            status: None,
            error: None,
            started_at: at,
            finished_at: at,
            fence: None,
            step: None,
            next: None,
        };
        let day = 86_400_000;
        let batch = [
            c("a", crate::CompletionOutcome::Done, 5),
            c("a", crate::CompletionOutcome::Done, 6),
            c("a", crate::CompletionOutcome::Failed, 7),
            c("b", crate::CompletionOutcome::Done, 8),
            c("a", crate::CompletionOutcome::Done, day + 1),
        ];
        let t = tally_completions(&batch);
        let counts: Vec<(i64, &str, &str, i64)> = t
            .iter()
            .map(|(k, n)| (k.day, k.channel, k.outcome, *n))
            .collect();
        assert_eq!(
            counts,
            [
                (0, "a", "delivered", 2),
                (0, "a", "failed", 1),
                (0, "b", "delivered", 1),
                (1, "a", "delivered", 1),
            ]
        );
    }
}
