//! Stored reports on SQLite: the counts `complete` and `record_sends` add in
//! their own transactions, and the report query (see [`crate::reports`]).

use rusqlite::{Connection, Transaction, params};

use super::error::Ctx;
use crate::model::tenant_to_db;
use crate::reports::{self, ReportParams, SendTally};
use crate::shared_sql::sqlite_placeholders;
use crate::{Completion, ReportQuery, ReportRow, Result};

/// Adds one key's count (?1 day, ?2 tenant, ?3 channel, ?4 outcome, ?5 rule,
/// ?6 job, ?7 count).
const UPSERT_COUNT: &str = "INSERT INTO report_counts \
    (day, tenant_id, channel, outcome, rule_id, job_id, count) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
    ON CONFLICT (day, tenant_id, channel, outcome, rule_id, job_id) \
    DO UPDATE SET count = report_counts.count + excluded.count";

/// Adds a job's count of one outcome on one day, reading its tenant, channel
/// and rule from the job itself (?1 day, ?2 job, ?3 outcome, ?4 count).
const UPSERT_JOB_COUNT: &str = "INSERT INTO report_counts \
    (day, tenant_id, channel, outcome, rule_id, job_id, count) \
    SELECT ?1, j.tenant_id, j.channel, ?3, COALESCE(t.rule_id, 0), j.id, ?4 \
    FROM jobs AS j LEFT JOIN tasks AS t ON t.id = j.task_id WHERE j.id = ?2 \
    ON CONFLICT (day, tenant_id, channel, outcome, rule_id, job_id) \
    DO UPDATE SET count = report_counts.count + excluded.count";

/// Adds a `complete` batch's outcomes, one upsert per distinct key.
pub(super) fn count_completions(tx: &Transaction<'_>, batch: &[Completion]) -> Result<()> {
    let mut upsert = tx
        .prepare_cached(UPSERT_COUNT)
        .ctx("preparing report count")?;
    for (k, n) in reports::tally_completions(batch) {
        upsert
            .execute(params![
                k.day,
                tenant_to_db(k.tenant),
                k.channel,
                k.outcome,
                k.rule,
                k.job,
                n
            ])
            .ctx("adding to report counts")?;
    }
    Ok(())
}

/// Adds what one `record_sends` wrote to a job's send log on `day`.
pub(super) fn count_sends(
    tx: &Transaction<'_>,
    job_id: i64,
    day: i64,
    tally: &SendTally,
) -> Result<()> {
    if tally.is_empty() {
        return Ok(());
    }
    let mut upsert = tx
        .prepare_cached(UPSERT_JOB_COUNT)
        .ctx("preparing report count")?;
    for (outcome, n) in tally.counts() {
        upsert
            .execute(params![day, job_id, outcome, n])
            .ctx("adding to report counts")?;
    }
    Ok(())
}

pub(super) fn report(conn: &Connection, q: &ReportQuery) -> Result<Vec<ReportRow>> {
    let p = ReportParams::new(q);
    let mut stmt = conn
        .prepare_cached(&sqlite_placeholders(&reports::select_sql(&q.group_by)))
        .ctx("preparing report")?;
    let mut rows = stmt
        .query(params![
            p.from_day, p.to_day, p.tenant, p.channel, p.outcome, p.rule, p.job, p.limit
        ])
        .ctx("querying report")?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().ctx("reading report")? {
        let raw = (
            r.get(0).ctx("report tenant")?,
            r.get(1).ctx("report channel")?,
            r.get(2).ctx("report outcome")?,
            r.get(3).ctx("report day")?,
            r.get(4).ctx("report rule")?,
            r.get(5).ctx("report job")?,
            r.get(6).ctx("report count")?,
        );
        out.extend(reports::decode_row(&q.group_by, raw)?);
    }
    Ok(out)
}
