//! The subject list and a subject's counted subscriptions on PostgreSQL (SQL
//! in [`crate::subject_query`]). Migration `0012_subject_counts` puts the
//! user and the bit in `reminder_timers_subject`, so counting can read the
//! index alone.

use deadpool_postgres::Transaction;
use herald_core::TenantId;

use super::{Ctx, PgStore};
use crate::model::{self, Columns, tenant_to_pg};
use crate::subject_query::{self as q, sql};
use crate::{Result, SubjectRecord, SubjectSummary, SubscriptionCounts};

async fn counts(
    tx: &Transaction<'_>,
    tenant: i32,
    subject_id: &str,
    cap: u64,
    by_bit: bool,
) -> Result<SubscriptionCounts> {
    let stmt = tx
        .prepare_cached(sql::COUNT.pg)
        .await
        .ctx("preparing subject counts")?;
    let row = tx
        .query_one(&stmt, &[&tenant, &subject_id, &q::count_limit(cap)])
        .await
        .ctx("counting subscriptions")?;
    let mut out = q::counts(
        cap,
        row.narrow(0, "count(*)")?,
        row.narrow(1, "count(DISTINCT user_id)")?,
    );
    if by_bit && out.reminders > 0 {
        let stmt = tx
            .prepare_cached(sql::COUNT_BY_BIT.pg)
            .await
            .ctx("preparing subject counts by bit")?;
        for row in tx
            .query(&stmt, &[&tenant, &subject_id, &q::by_bit_limit(cap)])
            .await
            .ctx("counting subscriptions by bit")?
        {
            out.by_bit.push((
                row.narrow(0, "reminder_timers.bit")?,
                row.narrow(1, "count(*)")?,
            ));
        }
    }
    Ok(out)
}

pub(super) async fn list(
    store: &PgStore,
    tenant: TenantId,
    after: &str,
    limit: usize,
    cap: u64,
) -> Result<Vec<SubjectSummary>> {
    let tenant = tenant_to_pg(tenant)?;
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning list_subjects")?;
    let stmt = tx
        .prepare_cached(sql::LIST.pg)
        .await
        .ctx("preparing list_subjects")?;
    let subjects: Vec<SubjectRecord> = tx
        .query(&stmt, &[&tenant, &after, &model::limit_to_db(limit)])
        .await
        .ctx("listing subjects")?
        .iter()
        .map(model::decode)
        .collect::<Result<_>>()?;
    let mut out = Vec::with_capacity(subjects.len());
    for subject in subjects {
        let counts = counts(&tx, tenant, &subject.subject_id, cap, false).await?;
        out.push(SubjectSummary { subject, counts });
    }
    tx.commit().await.ctx("ending list_subjects")?;
    Ok(out)
}

pub(super) async fn summary(
    store: &PgStore,
    tenant: TenantId,
    subject_id: &str,
    cap: u64,
) -> Result<Option<SubjectSummary>> {
    let tenant = tenant_to_pg(tenant)?;
    let mut client = store.client().await?;
    let tx = client
        .transaction()
        .await
        .ctx("beginning subject_summary")?;
    let stmt = tx
        .prepare_cached(sql::ONE.pg)
        .await
        .ctx("preparing subject read")?;
    let Some(row) = tx
        .query_opt(&stmt, &[&tenant, &subject_id])
        .await
        .ctx("reading subject")?
    else {
        return Ok(None);
    };
    let subject = model::decode(&row)?;
    let counts = counts(&tx, tenant, subject_id, cap, true).await?;
    tx.commit().await.ctx("ending subject_summary")?;
    Ok(Some(SubjectSummary { subject, counts }))
}

/// [`crate::ReminderStore::subject_outcomes`]: one snapshot for the counts
/// and the failures listed.
pub(super) async fn outcomes(
    store: &PgStore,
    tenant: TenantId,
    subject_id: &str,
    cap: u64,
    errors: usize,
    failed: usize,
) -> Result<q::SubjectOutcomes> {
    let tenant = tenant_to_pg(tenant)?;
    let mut client = store.client().await?;
    let tx = client
        .transaction()
        .await
        .ctx("beginning subject_outcomes")?;
    let stmt = tx
        .prepare_cached(sql::OUTCOMES.pg)
        .await
        .ctx("preparing subject outcomes")?;
    let rows = tx
        .query(&stmt, &[&tenant, &subject_id, &q::count_limit(cap)])
        .await
        .ctx("counting subject outcomes")?
        .iter()
        .map(model::decode::<q::OutcomeRow, _>)
        .collect::<Result<Vec<_>>>()?;
    let mut out = q::outcomes(cap, rows.into_iter().map(|r| (r.0, r.1, r.2)), errors);
    if failed > 0 && out.by_state.iter().any(|(s, _)| q::is_failure(*s)) {
        let stmt = tx
            .prepare_cached(sql::FAILED.pg)
            .await
            .ctx("preparing failed reminders")?;
        out.failed = tx
            .query(
                &stmt,
                &[
                    &tenant,
                    &subject_id,
                    &q::by_bit_limit(cap),
                    &model::limit_to_db(failed),
                ],
            )
            .await
            .ctx("reading failed reminders")?
            .iter()
            .map(model::decode)
            .collect::<Result<_>>()?;
    }
    tx.commit().await.ctx("ending subject_outcomes")?;
    Ok(out)
}

/// [`crate::ReminderStore::subject_failures`].
pub(super) async fn failures(
    store: &PgStore,
    tenant: TenantId,
    subject_id: &str,
    (from, until): (i64, i64),
    cap: u64,
) -> Result<u64> {
    let tenant = tenant_to_pg(tenant)?;
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::FAILED_COUNT.pg)
        .await
        .ctx("preparing subject failures")?;
    let row = client
        .query_one(
            &stmt,
            &[&tenant, &subject_id, &from, &until, &q::by_bit_limit(cap)],
        )
        .await
        .ctx("counting subject failures")?;
    row.narrow(0, "count(*)")
}
