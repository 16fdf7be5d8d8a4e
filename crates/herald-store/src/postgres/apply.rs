//! The group-commit write batch on PostgreSQL: one transaction for all of a
//! batch's ops, split into runs that go to the module owning their rows, and
//! the `pg_notify` that announces what the batch scheduled.

use herald_core::{TenantId, TimerId};

use super::{
    Ctx, PgStore, digests, directory, grants, notify, now_ms, reminders, timer_ops, timers,
};
use crate::{
    NewReminder, NewTimer, PutSubject, PutSubscriber, Result, RetryFilter, TimerPatch, WriteOp,
    WriteResult,
};

const NOTIFY: &str = "SELECT pg_notify('herald_timers', p) FROM unnest($1::text[]) AS p";

/// Consecutive ops of one kind, applied together; subject ops and reminder
/// cancels (rare, and each touching one subject or subscription) one by one.
enum Run<'a> {
    Insert(Vec<&'a NewTimer>),
    InsertDigest(&'a NewTimer),
    Cancel(Vec<(TenantId, TimerId, i64)>),
    AddReminders(Vec<&'a NewReminder>),
    PutSubject(&'a PutSubject),
    DeleteSubject {
        tenant: TenantId,
        subject_id: &'a str,
        at: i64,
    },
    CancelReminders {
        tenant: TenantId,
        user_id: &'a str,
        subject_id: &'a str,
        mask: u64,
        at: i64,
    },
    Patch(&'a TimerPatch),
    Replace(&'a NewTimer),
    Retry {
        tenant: TenantId,
        id: TimerId,
        at: i64,
    },
    RetryMany {
        tenant: TenantId,
        filter: &'a RetryFilter,
        at: i64,
        limit: usize,
    },
    PutSubscriber(&'a PutSubscriber),
    DeleteSubscriber {
        tenant: TenantId,
        user_id: &'a str,
    },
    RecordGrants(&'a crate::GrantRecording),
}

fn runs(ops: &[WriteOp]) -> Vec<Run<'_>> {
    let mut out: Vec<Run<'_>> = Vec::new();
    for op in ops {
        match (op, out.last_mut()) {
            (WriteOp::InsertTimer(t), Some(Run::Insert(v))) => v.push(t),
            (WriteOp::InsertTimer(t), _) => out.push(Run::Insert(vec![t])),
            (WriteOp::InsertDigest(t), _) => out.push(Run::InsertDigest(t)),
            (WriteOp::CancelTimer { tenant, id, at }, Some(Run::Cancel(v))) => {
                v.push((*tenant, *id, *at))
            }
            (WriteOp::CancelTimer { tenant, id, at }, _) => {
                out.push(Run::Cancel(vec![(*tenant, *id, *at)]))
            }
            (WriteOp::AddReminder(r), Some(Run::AddReminders(v))) => v.push(r),
            (WriteOp::AddReminder(r), _) => out.push(Run::AddReminders(vec![r])),
            (WriteOp::PutSubject(p), _) => out.push(Run::PutSubject(p)),
            (
                WriteOp::DeleteSubject {
                    tenant,
                    subject_id,
                    at,
                },
                _,
            ) => out.push(Run::DeleteSubject {
                tenant: *tenant,
                subject_id,
                at: *at,
            }),
            (
                WriteOp::CancelReminders {
                    tenant,
                    user_id,
                    subject_id,
                    mask,
                    at,
                },
                _,
            ) => out.push(Run::CancelReminders {
                tenant: *tenant,
                user_id,
                subject_id,
                mask: *mask,
                at: *at,
            }),
            (WriteOp::PatchTimer(p), _) => out.push(Run::Patch(p)),
            (WriteOp::ReplaceTimer(t), _) => out.push(Run::Replace(t)),
            (WriteOp::RetryTimer { tenant, id, at }, _) => out.push(Run::Retry {
                tenant: *tenant,
                id: *id,
                at: *at,
            }),
            (
                WriteOp::RetryTimers {
                    tenant,
                    filter,
                    at,
                    limit,
                },
                _,
            ) => out.push(Run::RetryMany {
                tenant: *tenant,
                filter,
                at: *at,
                limit: *limit,
            }),
            (WriteOp::PutSubscriber(p), _) => out.push(Run::PutSubscriber(p)),
            (WriteOp::DeleteSubscriber { tenant, user_id }, _) => out.push(Run::DeleteSubscriber {
                tenant: *tenant,
                user_id,
            }),
            (WriteOp::RecordGrants(r), _) => out.push(Run::RecordGrants(r)),
        }
    }
    out
}

pub(super) async fn apply(store: &PgStore, ops: &[WriteOp]) -> Result<Vec<WriteResult>> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning apply")?;
    let mut results = Vec::with_capacity(ops.len());
    let mut announce = Vec::new();
    let horizon = now_ms().saturating_add(store.notify_window_ms);
    for run in runs(ops) {
        match run {
            Run::Insert(new) => {
                timers::insert_run(&tx, &new, horizon, &mut results, &mut announce).await?
            }
            Run::InsertDigest(t) => {
                digests::insert(&tx, t, horizon, &mut results, &mut announce).await?
            }
            Run::Cancel(cancels) => timers::cancel_run(&tx, &cancels, &mut results).await?,
            Run::AddReminders(rs) => {
                for g in rs.iter().filter_map(|r| r.grant.as_ref()) {
                    grants::record_in(&tx, g).await?;
                }
                reminders::add_reminders(&tx, &rs, horizon, &mut results, &mut announce).await?
            }
            Run::PutSubject(put) => {
                let result = reminders::put_subject(&tx, put).await?;
                // Moved timers are announced like new ones: their owners must
                // re-wheel them at the new time.
                announce.extend(
                    result
                        .scheduled()
                        .into_iter()
                        .filter(|e| e.due_at <= horizon),
                );
                results.push(result);
            }
            Run::DeleteSubject {
                tenant,
                subject_id,
                at,
            } => results.push(reminders::delete_subject(&tx, tenant, subject_id, at).await?),
            Run::CancelReminders {
                tenant,
                user_id,
                subject_id,
                mask,
                at,
            } => results.push(
                reminders::cancel_reminders(&tx, tenant, user_id, subject_id, mask, at).await?,
            ),
            Run::Patch(p) => {
                results.push(timer_ops::patch_then_announce(&tx, p, horizon, &mut announce).await?)
            }
            Run::Replace(t) => {
                timer_ops::replace(&tx, t, horizon, &mut results, &mut announce).await?
            }
            Run::Retry { tenant, id, at } => {
                let result = timer_ops::retry(&tx, tenant, id, at).await?;
                announce.extend(
                    result
                        .scheduled()
                        .into_iter()
                        .filter(|e| e.due_at <= horizon),
                );
                results.push(result);
            }
            Run::RetryMany {
                tenant,
                filter,
                at,
                limit,
            } => {
                let result = timer_ops::retry_many(&tx, tenant, filter, at, limit).await?;
                announce.extend(
                    result
                        .scheduled()
                        .into_iter()
                        .filter(|e| e.due_at <= horizon),
                );
                results.push(result);
            }
            Run::PutSubscriber(p) => results.push(directory::put(&tx, p).await?),
            Run::DeleteSubscriber { tenant, user_id } => {
                results.push(directory::delete(&tx, tenant, user_id).await?)
            }
            Run::RecordGrants(r) => results.push(WriteResult::GrantsRecorded(
                grants::record_in(&tx, r).await?,
            )),
        }
    }
    if !announce.is_empty() {
        let payloads = notify::encode(&store.origin, &announce);
        let stmt = tx.prepare_cached(NOTIFY).await.ctx("preparing notify")?;
        tx.execute(&stmt, &[&payloads])
            .await
            .ctx("announcing new timers")?;
    }
    tx.commit().await.ctx("committing apply")?;
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_split_into_runs_in_order() {
        let t = crate::testsuite::fixtures::timer(1);
        let cancel = |id, at| WriteOp::CancelTimer {
            tenant: herald_core::DEFAULT_TENANT,
            id,
            at,
        };
        let ops = vec![
            WriteOp::InsertTimer(t.clone()),
            WriteOp::InsertTimer(t.clone()),
            cancel(1, 2),
            WriteOp::InsertTimer(t.clone()),
            cancel(3, 4),
            cancel(5, 6),
        ];
        let shape: Vec<(char, usize)> = runs(&ops)
            .iter()
            .map(|r| match r {
                Run::Insert(v) => ('i', v.len()),
                Run::Cancel(v) => ('c', v.len()),
                Run::AddReminders(v) => ('r', v.len()),
                _ => ('1', 1),
            })
            .collect();
        assert_eq!(shape, vec![('i', 2), ('c', 1), ('i', 1), ('c', 2)]);
    }
}
