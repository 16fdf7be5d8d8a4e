//! The group-commit write batch: one `BEGIN IMMEDIATE` transaction for all
//! of a batch's ops, each handed to the module that owns its rows.

use rusqlite::{Connection, TransactionBehavior};

use super::error::Ctx;
use super::{digests, directory, grants, reminders, timer_ops, timers};
use crate::{Result, WriteOp, WriteResult};

pub(super) fn apply(conn: &mut Connection, ops: Vec<WriteOp>) -> Result<Vec<WriteResult>> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning apply")?;
    let mut results = Vec::with_capacity(ops.len());
    {
        let mut insert = timers::TimerInserts::prepare(&tx)?;
        let mut ops = ops.into_iter().peekable();
        while let Some(op) = ops.next() {
            let result = match op {
                // A run of plain timers (a bulk request's, or many single
                // creates in one group commit) shares multi-row inserts.
                WriteOp::InsertTimer(t) if timers::plain(&t) => {
                    let mut run = vec![t];
                    while let Some(WriteOp::InsertTimer(t)) =
                        ops.next_if(|op| matches!(op, WriteOp::InsertTimer(t) if timers::plain(t)))
                    {
                        run.push(t);
                    }
                    timers::insert_plain(&tx, &mut insert, run, &mut results)?;
                    continue;
                }
                WriteOp::InsertTimer(t) => timers::insert_timer(&tx, &mut insert, t)?,
                WriteOp::InsertDigest(t) => digests::insert(&tx, &mut insert, t)?,
                WriteOp::CancelTimer { tenant, id, at } => {
                    timers::cancel_timer(&tx, tenant, id, at)?
                }
                WriteOp::PutSubject(put) => reminders::put_subject(&tx, &put)?,
                WriteOp::DeleteSubject {
                    tenant,
                    subject_id,
                    at,
                } => reminders::delete_subject(&tx, tenant, &subject_id, at)?,
                WriteOp::AddReminder(r) => reminders::add_reminder(&tx, &mut insert, r)?,
                WriteOp::CancelReminders {
                    tenant,
                    user_id,
                    subject_id,
                    mask,
                    at,
                } => reminders::cancel_reminders(&tx, tenant, &user_id, &subject_id, mask, at)?,
                WriteOp::PatchTimer(p) => timer_ops::patch(&tx, &p)?,
                WriteOp::ReplaceTimer(t) => timer_ops::replace(&tx, &mut insert, t)?,
                WriteOp::RetryTimer { tenant, id, at } => timer_ops::retry(&tx, tenant, id, at)?,
                WriteOp::RetryTimers {
                    tenant,
                    filter,
                    at,
                    limit,
                } => timer_ops::retry_many(&tx, tenant, &filter, at, limit)?,
                WriteOp::PutSubscriber(put) => directory::put(&tx, &put)?,
                WriteOp::DeleteSubscriber { tenant, user_id } => {
                    directory::delete(&tx, tenant, &user_id)?
                }
                WriteOp::RecordGrants(rec) => {
                    WriteResult::GrantsRecorded(grants::record_in(&tx, &rec)?)
                }
            };
            results.push(result);
        }
        insert.count(&tx)?;
    }
    tx.commit().ctx("committing apply")?;
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::testing::migrated;

    /// A batch mixing runs of plain timers (shared multi-row inserts of 64
    /// and 8, the rest one by one) with keyed and routed ones: each answer
    /// in the order of its op, each id the row of its timer, the counts
    /// right.
    #[test]
    fn runs_of_plain_timers_share_multi_row_inserts() {
        use crate::testsuite::fixtures::{keyed, timer};
        let mut conn = migrated();
        let mut wanted = Vec::new();
        let mut ops = Vec::new();
        for (i, n) in [75_usize, 1, 9, 1, 3].into_iter().enumerate() {
            for j in 0..n {
                let mut t = timer(1_000 + j as i64);
                t.recipient = format!("run{i}-{j}");
                t.message = format!("{{\"n\":{j}}}");
                wanted.push(t.clone());
                ops.push(crate::WriteOp::InsertTimer(t));
            }
            let mut t = if i % 2 == 0 {
                keyed(7, &format!("k{i}"))
            } else {
                crate::NewTimer {
                    routing: Some("{}".into()),
                    ..timer(8)
                }
            };
            t.recipient = format!("odd{i}");
            wanted.push(t.clone());
            ops.push(crate::WriteOp::InsertTimer(t));
        }
        let results = apply(&mut conn, ops).unwrap();
        assert_eq!(results.len(), wanted.len());
        let mut ids = Vec::new();
        for (r, t) in results.iter().zip(&wanted) {
            let WriteResult::Created(rec) = r else {
                panic!("{r:?}")
            };
            assert_eq!(rec.recipient, t.recipient);
            assert_eq!(
                timers::get_timer(&conn, rec.id).unwrap().as_ref(),
                Some(rec)
            );
            ids.push(rec.id);
        }
        ids.dedup();
        assert_eq!(ids.len(), wanted.len());
        let pending: i64 = conn
            .query_row(
                "SELECT n FROM timer_counts WHERE tenant_id = 1 AND state = 0",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(pending, wanted.len() as i64);
        // The plain ones wait for the filer; the routed ones are filed.
        let unfiled: i64 = conn
            .query_row("SELECT count(*) FROM timers WHERE filed = 0", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(unfiled, wanted.len() as i64 - 2);
    }
}
