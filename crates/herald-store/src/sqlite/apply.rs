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
