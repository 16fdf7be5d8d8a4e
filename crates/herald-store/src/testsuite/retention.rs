//! Retention ([`crate::Store::purge`], [`crate::CampaignStore::delete_job`]):
//! each kind deletes what is old and finished, in batches, and nothing else.
//! A pending timer, a running job, an audience in use and a subject with
//! pending reminders stay however old they are.

use herald_core::TimerState;
use herald_core::campaign::SendState;

use super::fixtures::*;
use super::support::{S, get, insert_all};
use crate::{
    CompletionOutcome, JobDeletion, JobRecord, NewAuditEntry, NewTimer, PartitionCutoffs,
    RetentionKind, WriteOp, WriteResult,
};

pub(crate) const T0: i64 = 1_700_000_000_000;
pub(crate) const DAY: i64 = 86_400_000;
/// Everything before this is old.
pub(crate) const CUTOFF: i64 = T0 + 10 * DAY;

async fn purge_all(store: &S, kind: RetentionKind, cutoff: i64, limit: usize) -> u64 {
    let mut total = 0;
    loop {
        let n = store.purge(kind, cutoff, limit).await.expect("purge");
        assert!(n <= limit as u64, "{kind}: {n} rows in a batch of {limit}");
        total += n;
        if n < limit as u64 {
            return total;
        }
    }
}

/// A sealed audience of `n` fixture recipients.
pub(crate) async fn audience(store: &S, n: u64) -> i64 {
    super::support::sealed_audience(store, n, T0).await
}

/// A job over a new audience of `n`, with its first segment's sends recorded.
pub(crate) async fn job_with_sends(store: &S, n: u64, sent: u64, now: i64) -> JobRecord {
    let aud = audience(store, n).await;
    let job = store
        .create_job(job_spec(aud, n), now)
        .await
        .expect("create_job")
        .expect("a job");
    let c = store
        .claim_segment("w", now + 1, 30_000)
        .await
        .expect("claim")
        .expect("a segment");
    assert_eq!(c.claim.job_id, job.id);
    store
        .record_sends(
            &c.claim,
            sent,
            sends(0..sent, SendState::Delivered),
            now + 2,
            30_000,
        )
        .await
        .expect("record_sends");
    job
}

pub async fn finished_timers_go_with_their_send_log_pending_ones_stay(store: S) {
    let mut news: Vec<_> = (0..5).map(|i| timer(T0 + i)).collect();
    // Due long after the cutoff, cancelled long before it.
    news.push(timer(CUTOFF + 100 * DAY));
    // Another tenant's.
    news.push(NewTimer {
        tenant: OTHER_TENANT,
        ..timer(T0 + 6)
    });
    let ts = insert_all(&store, news).await;
    // 0 done and 1 dead long ago, 2 done recently (due long ago), 3 cancelled
    // long ago, 4 pending, 5 cancelled long ago ahead of its due time, 6 the
    // other tenant's, done long ago.
    let done = |t, at| completion(t, 1, CompletionOutcome::Done, at);
    store
        .complete(vec![
            done(&ts[0], T0 + 10),
            completion(&ts[1], 1, CompletionOutcome::Dead, T0 + 11),
            done(&ts[2], CUTOFF + 1),
            done(&ts[6], T0 + 14),
        ])
        .await
        .expect("complete");
    for (t, at) in [(&ts[3], T0 + 12), (&ts[5], T0 + 13)] {
        let r = store
            .apply(vec![WriteOp::CancelTimer {
                tenant: DEFAULT_TENANT,
                id: t.id,
                at,
            }])
            .await
            .expect("cancel");
        assert!(matches!(r[0], WriteResult::Cancelled(_)), "{r:?}");
    }
    assert_eq!(store.deliveries_for(ts[0].id).await.unwrap().len(), 1);

    // Batches of one: five calls of one row, then nothing.
    assert_eq!(purge_all(&store, RetentionKind::Timers, CUTOFF, 1).await, 5);
    for t in [&ts[0], &ts[1], &ts[3], &ts[5], &ts[6]] {
        assert!(store.get_timer(t.id).await.unwrap().is_none(), "{}", t.id);
        assert!(store.deliveries_for(t.id).await.unwrap().is_empty());
    }
    assert_eq!(get(&store, ts[2].id).await.state, TimerState::Done);
    assert_eq!(store.deliveries_for(ts[2].id).await.unwrap().len(), 1);
    // Pending, and due long before the cutoff: untouched.
    assert_eq!(get(&store, ts[4].id).await.state, TimerState::Pending);
    assert_eq!(
        store
            .purge(RetentionKind::Timers, i64::MAX, 1_000)
            .await
            .unwrap(),
        1,
        "only the recent done timer is left to purge"
    );
    assert_eq!(get(&store, ts[4].id).await.state, TimerState::Pending);
}

pub async fn ended_jobs_go_send_log_first_running_jobs_and_audiences_in_use_stay(store: S) {
    let ended = job_with_sends(&store, 20, 5, T0).await;
    let cancelled = store
        .cancel_job(ended.id, T0 + 3)
        .await
        .unwrap()
        .expect("cancelled");
    assert!(cancelled.finished_at.is_some());
    // Running, made long ago: it and its audience stay.
    let running = job_with_sends(&store, 10, 4, T0 + 4).await;
    // An audience only a rule names stays too; an unused one goes.
    let ruled = audience(&store, 3).await;
    store
        .create_rule(rule_spec("r", Some(ruled)), T0)
        .await
        .expect("create_rule");
    let unused = audience(&store, 2).await;

    // The send log of the ended job, in batches of two.
    assert_eq!(
        purge_all(&store, RetentionKind::SendLog, CUTOFF, 2).await,
        5
    );
    assert!(store.job_sends(ended.id, 0, 20).await.unwrap().is_empty());
    assert!(
        store.get_job(ended.id).await.unwrap().is_some(),
        "the job stays"
    );
    assert_eq!(store.job_sends(running.id, 0, 10).await.unwrap().len(), 4);

    // The ended job is still stored: its audience is in use.
    assert_eq!(
        purge_all(&store, RetentionKind::Audiences, CUTOFF, 1_000).await,
        2
    );
    assert!(store.get_audience(unused).await.unwrap().is_none());
    assert!(
        store
            .get_audience(ended.audience_id)
            .await
            .unwrap()
            .is_some()
    );

    // Not yet old at an earlier cutoff.
    assert_eq!(
        store.purge(RetentionKind::Jobs, T0, 1_000).await.unwrap(),
        0
    );
    let n = purge_all(&store, RetentionKind::Jobs, CUTOFF, 1_000).await;
    assert_eq!(n, 2, "its one segment and the job");
    assert!(store.get_job(ended.id).await.unwrap().is_none());
    assert!(
        store
            .job_segments(ended.id, None, 100)
            .await
            .unwrap()
            .is_empty()
    );
    let still = store
        .get_job(running.id)
        .await
        .unwrap()
        .expect("running job");
    assert_eq!(still.state, herald_core::campaign::JobState::Running);
    assert_eq!(store.job_sends(running.id, 0, 10).await.unwrap().len(), 4);

    // Now the ended job's audience goes; the running job's and the rule's stay.
    assert_eq!(
        purge_all(&store, RetentionKind::Audiences, CUTOFF, 1_000).await,
        2
    );
    assert!(
        store
            .get_audience(ended.audience_id)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .get_audience(running.audience_id)
            .await
            .unwrap()
            .is_some()
    );
    assert!(store.get_audience(ruled).await.unwrap().is_some());
    assert_eq!(
        store
            .audience_slice(running.audience_id, 0, 10)
            .await
            .unwrap()
            .len(),
        10
    );
}

pub async fn delete_job_takes_finished_jobs_only(store: S) {
    let running = job_with_sends(&store, 10, 3, T0).await;
    assert_eq!(
        store.delete_job(running.id).await.unwrap(),
        JobDeletion::NotFinished
    );
    assert_eq!(store.job_sends(running.id, 0, 10).await.unwrap().len(), 3);
    store.cancel_job(running.id, T0 + 5).await.unwrap();
    assert_eq!(
        store.delete_job(running.id).await.unwrap(),
        JobDeletion::Deleted
    );
    assert!(store.get_job(running.id).await.unwrap().is_none());
    assert!(store.job_sends(running.id, 0, 10).await.unwrap().is_empty());
    assert_eq!(
        store.delete_job(running.id).await.unwrap(),
        JobDeletion::NotFound
    );
    // With its job gone the audience is unused: the old call drops it.
    assert!(store.drop_audience(running.audience_id).await.unwrap());
}

pub async fn past_subjects_go_with_their_reminders_unless_one_is_pending(store: S) {
    let put = |id: &str| WriteOp::PutSubject(subject(id, T0));
    let add = |user: &str, s: &str| WriteOp::AddReminder(reminder(user, s, 5));
    let r = store
        .apply(vec![
            put("past"),
            put("waiting"),
            add("u1", "past"),
            add("u2", "past"),
            add("u1", "waiting"),
        ])
        .await
        .expect("apply");
    let timer_of = |r: &WriteResult| created(r);
    let (p1, p2) = (timer_of(&r[2]), timer_of(&r[3]));
    store
        .complete(vec![
            completion(&p1, 1, CompletionOutcome::Done, T0),
            completion(&p2, 1, CompletionOutcome::Done, T0),
        ])
        .await
        .expect("complete");
    // Reminders' timers go with their subject, not on their own.
    assert_eq!(
        purge_all(&store, RetentionKind::Timers, CUTOFF, 1_000).await,
        0
    );

    let n = purge_all(&store, RetentionKind::Subjects, CUTOFF, 1_000).await;
    assert_eq!(n, 3, "two reminders and the subject");
    let left = store
        .get_subjects(DEFAULT_TENANT, &["past".into(), "waiting".into()])
        .await
        .unwrap();
    assert_eq!(
        left.iter()
            .map(|s| s.subject_id.as_str())
            .collect::<Vec<_>>(),
        ["waiting"]
    );
    assert!(store.get_timer(p1.id).await.unwrap().is_none());
    assert!(store.deliveries_for(p1.id).await.unwrap().is_empty());
    let u1 = store
        .user_reminders(DEFAULT_TENANT, "u1", 100)
        .await
        .unwrap();
    assert_eq!(u1.len(), 1, "{u1:?}");
    assert_eq!(u1[0].subject_id, "waiting");
    // The past subject can be made again, and reminded of afresh.
    let r = store
        .apply(vec![
            WriteOp::PutSubject(subject("past", CUTOFF + DAY)),
            add("u2", "past"),
        ])
        .await
        .unwrap();
    assert!(matches!(r[1], WriteResult::Created(_)), "{r:?}");
}

pub async fn ended_tasks_go_except_each_versions_last(store: S) {
    let rule = store
        .create_rule(rule_spec("r", None), T0)
        .await
        .expect("create_rule");
    for at in [T0, T0 + 1, T0 + 2] {
        store
            .plan_task(rule.id, 1, at, T0)
            .await
            .unwrap()
            .expect("task");
    }
    // Disabling cancels the three pending tasks.
    store
        .set_rule_enabled(rule.id, false, T0 + 3)
        .await
        .expect("disable");
    assert_eq!(purge_all(&store, RetentionKind::Tasks, CUTOFF, 1).await, 2);
    let tasks = store.rule_tasks(rule.id, 10).await.unwrap();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(tasks[0].planned_at, T0 + 2);
}

pub async fn old_audit_entries_go(store: S) {
    let entry = |at| NewAuditEntry {
        at,
        key_id: None,
        key_name: None,
        tenant: DEFAULT_TENANT,
        method: "POST".into(),
        route: "/v1/timers".into(),
        resource_id: None,
        status: 201,
        count: 1,
        reason: None,
    };
    store
        .append_audit(
            (0..5)
                .map(|i| entry(T0 + i))
                .chain([entry(CUTOFF)])
                .collect(),
        )
        .await
        .expect("append_audit");
    assert_eq!(
        purge_all(&store, RetentionKind::AuditLog, CUTOFF, 2).await,
        5
    );
    let left = store
        .list_audit(Default::default(), None, 100)
        .await
        .expect("list_audit");
    assert_eq!(left.iter().map(|e| e.at).collect::<Vec<_>>(), [CUTOFF]);
}

/// Partition maintenance (PostgreSQL drops whole partitions of the send
/// logs; SQLite has none) never takes a row retention must keep, however
/// late the cutoffs: a pending timer's send log, a running job's sends.
/// (`postgres/partitions.rs` tests what a drop does take.)
pub async fn partition_maintenance_keeps_what_is_live(store: S) {
    let ts = insert_all(&store, (0..2).map(|i| timer(T0 + i))).await;
    store
        .complete(vec![
            completion(
                &ts[0],
                1,
                CompletionOutcome::Retry {
                    next_due_at: T0 + DAY,
                },
                T0 + 5,
            ),
            completion(&ts[1], 1, CompletionOutcome::Done, T0 + 6),
        ])
        .await
        .expect("complete");
    let running = job_with_sends(&store, 10, 4, T0).await;
    let late = PartitionCutoffs {
        timers: Some(i64::MAX),
        send_log: Some(i64::MAX),
    };
    // Twice: the second call finds the partitions the first one made.
    for _ in 0..2 {
        store
            .maintain_partitions(late)
            .await
            .expect("maintain_partitions");
    }
    assert_eq!(get(&store, ts[0].id).await.state, TimerState::Pending);
    assert_eq!(store.deliveries_for(ts[0].id).await.unwrap().len(), 1);
    assert_eq!(store.job_sends(running.id, 0, 10).await.unwrap().len(), 4);
    // New rows still find a place.
    let more = insert_all(&store, [timer(T0 + 9)]).await;
    store
        .complete(vec![completion(
            &more[0],
            1,
            CompletionOutcome::Done,
            T0 + 10,
        )])
        .await
        .expect("complete after maintenance");
    assert_eq!(store.deliveries_for(more[0].id).await.unwrap().len(), 1);
}
