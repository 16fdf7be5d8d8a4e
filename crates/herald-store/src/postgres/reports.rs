//! Stored reports on PostgreSQL: the counts `complete` and `record_sends` add
//! in their own transactions, each batch as one statement, and the report
//! query (see [`crate::reports`]).

use deadpool_postgres::Transaction;

use super::{Ctx, Param, PgStore, col};
use crate::model::tenant_to_pg;
use crate::reports::{self, ReportParams, SendTally};
use crate::{Completion, ReportQuery, ReportRow, Result};

/// A batch's counts, one row per distinct key, in key order (the order the
/// row locks are taken in), added to the writer's stripe of each key
/// (migration `0023_report_stripes`: concurrent nodes would otherwise queue
/// on one row until each commits).
const UPSERT_COUNTS: &str = "INSERT INTO report_counts \
    (day, tenant_id, channel, outcome, rule_id, job_id, count, stripe) \
    SELECT u.day, u.tenant_id, u.channel, u.outcome, u.rule_id, u.job_id, u.n, \
           (pg_backend_pid() % 16)::smallint \
    FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::bigint[], \
                $6::bigint[], $7::bigint[]) \
         WITH ORDINALITY AS u(day, tenant_id, channel, outcome, rule_id, job_id, n, i) \
    ORDER BY u.i \
    ON CONFLICT (day, tenant_id, channel, outcome, rule_id, job_id, stripe) \
    DO UPDATE SET count = report_counts.count + excluded.count";

/// A job's counts of one day, per outcome, with its tenant, channel and rule
/// read from the job itself ($1 day, $2 job, $3 outcomes, $4 counts).
const UPSERT_JOB_COUNTS: &str = "INSERT INTO report_counts \
    (day, tenant_id, channel, outcome, rule_id, job_id, count, stripe) \
    SELECT $1::bigint, j.tenant_id, j.channel, u.outcome, COALESCE(t.rule_id, 0), j.id, u.n, \
           (pg_backend_pid() % 16)::smallint \
    FROM jobs AS j LEFT JOIN tasks AS t ON t.id = j.task_id \
    CROSS JOIN unnest($3::text[], $4::bigint[]) WITH ORDINALITY AS u(outcome, n, i) \
    WHERE j.id = $2 \
    ORDER BY u.i \
    ON CONFLICT (day, tenant_id, channel, outcome, rule_id, job_id, stripe) \
    DO UPDATE SET count = report_counts.count + excluded.count";

/// Adds a `complete` batch's outcomes.
pub(super) async fn count_completions(tx: &Transaction<'_>, batch: &[Completion]) -> Result<()> {
    let tally = reports::tally_completions(batch);
    let mut day = Vec::with_capacity(tally.len());
    let mut tenant = Vec::with_capacity(tally.len());
    let mut channel = Vec::with_capacity(tally.len());
    let mut outcome = Vec::with_capacity(tally.len());
    let mut rule = Vec::with_capacity(tally.len());
    let mut job = Vec::with_capacity(tally.len());
    let mut n = Vec::with_capacity(tally.len());
    for (k, count) in &tally {
        day.push(k.day);
        tenant.push(tenant_to_pg(k.tenant)?);
        channel.push(k.channel);
        outcome.push(k.outcome);
        rule.push(k.rule);
        job.push(k.job);
        n.push(*count);
    }
    if n.is_empty() {
        return Ok(());
    }
    let stmt = tx
        .prepare_cached(UPSERT_COUNTS)
        .await
        .ctx("preparing report counts")?;
    let params: [Param<'_>; 7] = [&day, &tenant, &channel, &outcome, &rule, &job, &n];
    tx.execute(&stmt, &params)
        .await
        .ctx("adding to report counts")?;
    Ok(())
}

/// Adds what one `record_sends` wrote to a job's send log on `day`.
pub(super) async fn count_sends(
    tx: &Transaction<'_>,
    job_id: i64,
    day: i64,
    tally: &SendTally,
) -> Result<()> {
    if tally.is_empty() {
        return Ok(());
    }
    let (outcome, n): (Vec<&str>, Vec<i64>) = tally.counts().unzip();
    let stmt = tx
        .prepare_cached(UPSERT_JOB_COUNTS)
        .await
        .ctx("preparing report counts")?;
    tx.execute(&stmt, &[&day, &job_id, &outcome, &n])
        .await
        .ctx("adding to report counts")?;
    Ok(())
}

pub(super) async fn report(store: &PgStore, q: &ReportQuery) -> Result<Vec<ReportRow>> {
    let p = ReportParams::new(q);
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(&reports::select_sql(&q.group_by))
        .await
        .ctx("preparing report")?;
    let params: [Param<'_>; 8] = [
        &p.from_day,
        &p.to_day,
        &p.tenant,
        &p.channel,
        &p.outcome,
        &p.rule,
        &p.job,
        &p.limit,
    ];
    let rows = client.query(&stmt, &params).await.ctx("reading report")?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let raw = (
            col(r, 0, "report tenant")?,
            col(r, 1, "report channel")?,
            col(r, 2, "report outcome")?,
            col(r, 3, "report day")?,
            col(r, 4, "report rule")?,
            col(r, 5, "report job")?,
            col(r, 6, "report count")?,
        );
        out.extend(reports::decode_row(&q.group_by, raw)?);
    }
    Ok(out)
}
