//! The timer counters ([`crate::TimerStore::count_by_tenant_state`], migration
//! 0020) against a real count: after every step of a mixed sequence of
//! writes, and under concurrent writers, the counters equal
//! `count(*) GROUP BY tenant, state`, before and after a fold.

use herald_core::{TimerKind, TimerState};

use super::fixtures::*;
use super::support::{S, counts_of, insert_all};
use crate::{
    CompletionOutcome, NewTimer, RetentionKind, RetryFilter, TimerPatch, WriteOp, WriteResult,
};

const T0: i64 = 1_700_000_000_000;
const DAY: i64 = 86_400_000;

/// Panics unless the counters equal a scan, both as read and after a fold
/// (which must change no figure). Returns the figures.
async fn counters_match(store: &S, step: &str) -> Vec<(TenantId, TimerState, u64)> {
    let counted = store.count_by_tenant_state().await.expect("counted");
    let scanned = store.scan_by_tenant_state().await.expect("scanned");
    assert_eq!(counted, scanned, "after {step}: counters against the scan");
    store.fold_timer_counts().await.expect("fold");
    let folded = store.count_by_tenant_state().await.expect("counted");
    assert_eq!(folded, scanned, "after {step} and a fold");
    counts_of(store, DEFAULT_TENANT).await;
    scanned
}

async fn apply(store: &S, ops: Vec<WriteOp>) -> Vec<WriteResult> {
    store.apply(ops).await.expect("apply")
}

fn theirs(due_at: i64) -> NewTimer {
    NewTimer {
        tenant: OTHER_TENANT,
        ..timer(due_at)
    }
}

pub async fn counters_follow_every_write_and_purge(store: S) {
    assert!(counters_match(&store, "nothing").await.is_empty());

    // Inserts: one batch over two tenants, a key taken twice.
    let ts = insert_all(
        &store,
        (0..6)
            .map(|i| timer(T0 + i))
            .chain((0..3).map(|i| theirs(T0 + i))),
    )
    .await;
    let r = apply(
        &store,
        vec![
            WriteOp::InsertTimer(keyed(T0, "k")),
            WriteOp::InsertTimer(keyed(T0, "k")),
        ],
    )
    .await;
    assert!(matches!(r[1], WriteResult::Existing(_)), "{r:?}");
    let figures = counters_match(&store, "inserts").await;
    assert_eq!(
        figures,
        vec![
            (DEFAULT_TENANT, TimerState::Pending, 7),
            (OTHER_TENANT, TimerState::Pending, 3)
        ]
    );

    // Completions of each outcome, one of them a retry that stays pending.
    let at = T0 + 100;
    store
        .complete(vec![
            completion(&ts[0], 1, CompletionOutcome::Done, at),
            completion(
                &ts[1],
                1,
                CompletionOutcome::Retry {
                    next_due_at: at + 10,
                },
                at,
            ),
            completion(&ts[2], 1, CompletionOutcome::Failed, at),
            completion(&ts[3], 1, CompletionOutcome::Dead, at),
            completion(&ts[6], 1, CompletionOutcome::Dead, at),
        ])
        .await
        .expect("complete");
    // A duplicate completion changes nothing.
    store
        .complete(vec![completion(&ts[0], 1, CompletionOutcome::Done, at)])
        .await
        .expect("complete again");
    counters_match(&store, "completions").await;

    // Cancel (twice), patch and replace by key: pending stays pending.
    let cancel = |id| WriteOp::CancelTimer {
        tenant: DEFAULT_TENANT,
        id,
        at,
    };
    apply(&store, vec![cancel(ts[4].id), cancel(ts[4].id)]).await;
    let patch = WriteOp::PatchTimer(TimerPatch {
        tenant: DEFAULT_TENANT,
        id: ts[5].id,
        due_at: Some(T0 + 5_000),
        message: None,
        priority: None,
        at,
    });
    apply(
        &store,
        vec![patch, WriteOp::ReplaceTimer(keyed(T0 + 9, "k"))],
    )
    .await;
    let figures = counters_match(&store, "cancel, patch, replace").await;
    let mine = |s| {
        figures
            .iter()
            .find(|&&(t, st, _)| t == DEFAULT_TENANT && st == s)
            .map_or(0, |f| f.2)
    };
    assert_eq!(
        [TimerState::Pending, TimerState::Done, TimerState::Failed].map(mine),
        [3, 1, 1]
    );

    // Replays: one failed timer, then every dead one of the tenant.
    apply(
        &store,
        vec![WriteOp::RetryTimer {
            tenant: DEFAULT_TENANT,
            id: ts[2].id,
            at: at + 1,
        }],
    )
    .await;
    counters_match(&store, "retry one").await;
    apply(
        &store,
        vec![WriteOp::RetryTimers {
            tenant: DEFAULT_TENANT,
            filter: RetryFilter::default(),
            at: at + 2,
            limit: 100,
        }],
    )
    .await;
    counters_match(&store, "retry by filter").await;

    // Reminders: their timers are made, moved and cancelled with the subject.
    let r = apply(
        &store,
        vec![
            WriteOp::PutSubject(subject("s", T0 + DAY)),
            WriteOp::AddReminder(reminder("u1", "s", 5)),
            WriteOp::AddReminder(reminder("u2", "s", 5)),
        ],
    )
    .await;
    let rem = created(&r[1]);
    counters_match(&store, "reminders").await;
    apply(
        &store,
        vec![WriteOp::PutSubject(subject("s", T0 + 2 * DAY))],
    )
    .await;
    store
        .complete(vec![completion(&rem, 1, CompletionOutcome::Done, at)])
        .await
        .expect("complete a reminder");
    apply(
        &store,
        vec![WriteOp::CancelReminders {
            tenant: DEFAULT_TENANT,
            user_id: "u2".into(),
            subject_id: "s".into(),
            mask: u64::MAX,
            at,
        }],
    )
    .await;
    counters_match(&store, "a moved subject, a fired and a cancelled reminder").await;

    // Retention: finished timers go, and so do their counts.
    let gone = store
        .purge(RetentionKind::Timers, i64::MAX, 2)
        .await
        .expect("purge");
    assert_eq!(gone, 2);
    counters_match(&store, "a purge batch").await;
    while store
        .purge(RetentionKind::Timers, i64::MAX, 1_000)
        .await
        .expect("purge")
        > 0
    {}
    store
        .purge(RetentionKind::Subjects, i64::MAX, 1_000)
        .await
        .expect("purge subjects");
    let figures = counters_match(&store, "purging everything finished").await;
    // The cancelled reminder's timer stays: cancelling its bit unlinked it
    // from the subject, and retention leaves reminders' timers to their subject.
    assert_eq!(
        figures,
        vec![
            (DEFAULT_TENANT, TimerState::Pending, 5),
            (DEFAULT_TENANT, TimerState::Cancelled, 1),
            (OTHER_TENANT, TimerState::Pending, 2)
        ]
    );
}

/// Two handles write at once, many batches each: the counters still add up
/// (on PostgreSQL, every transaction appends its own change rows).
pub async fn counters_stay_exact_under_concurrent_writers(a: S, b: S) {
    let writer = |store: S, seed: i64| {
        tokio::spawn(async move {
            for round in 0..20 {
                let due = T0 + seed * 1_000 + round;
                let r = store
                    .apply(inserts((0..10).map(|i| timer(due + i))))
                    .await
                    .expect("apply");
                let made: Vec<_> = r.iter().map(created).collect();
                let done = made[..4]
                    .iter()
                    .map(|t| completion(t, 1, CompletionOutcome::Done, due))
                    .collect();
                store.complete(done).await.expect("complete");
                store
                    .apply(vec![WriteOp::CancelTimer {
                        tenant: DEFAULT_TENANT,
                        id: made[5].id,
                        at: due,
                    }])
                    .await
                    .expect("cancel");
                if round % 5 == 0 {
                    store.fold_timer_counts().await.expect("fold");
                }
            }
        })
    };
    let (ta, tb) = (writer(a.clone(), 1), writer(b.clone(), 2));
    ta.await.expect("writer a");
    tb.await.expect("writer b");
    let figures = counters_match(&a, "concurrent writers").await;
    assert_eq!(
        figures,
        vec![
            (DEFAULT_TENANT, TimerState::Pending, 200),
            (DEFAULT_TENANT, TimerState::Done, 160),
            (DEFAULT_TENANT, TimerState::Cancelled, 40),
        ]
    );
    assert_eq!(counters_match(&b, "the other handle").await, figures);
}

/// The forecast's count (`due_counts`): pending timers only, per tenant,
/// channel, kind and bucket, the window's end exclusive, and a count that
/// stops at its row limit says where.
pub async fn due_counts_group_what_falls_due_and_stop_at_the_limit(store: S) {
    const MIN: i64 = 60_000;
    let on = |due_at: i64, channel: &str, kind: TimerKind| NewTimer {
        channel: channel.into(),
        kind,
        ..timer(due_at)
    };
    let ts = insert_all(
        &store,
        [
            on(T0, "wechat", TimerKind::Timer),
            on(T0 + 10, "wechat", TimerKind::Timer),
            on(T0 + 20, "wechat", TimerKind::Reminder),
            on(T0 + MIN + 5, "sms", TimerKind::Timer),
            on(T0 + MIN + 6, "sms", TimerKind::Timer),
            // Cancelled below: not counted.
            on(T0 + MIN + 7, "sms", TimerKind::Timer),
            // Before the window and at its (exclusive) end: not counted.
            on(T0 - 1, "wechat", TimerKind::Timer),
            on(T0 + 3 * MIN, "wechat", TimerKind::Timer),
            NewTimer {
                tenant: OTHER_TENANT,
                ..on(T0 + 2 * MIN, "wechat", TimerKind::Timer)
            },
        ],
    )
    .await;
    let r = apply(
        &store,
        vec![WriteOp::CancelTimer {
            tenant: DEFAULT_TENANT,
            id: ts[5].id,
            at: T0,
        }],
    )
    .await;
    assert!(matches!(r[0], WriteResult::Cancelled(_)), "{r:?}");

    let mut got = store
        .due_counts(T0, T0 + 3 * MIN, MIN, 1_000)
        .await
        .expect("due_counts");
    got.counts
        .sort_by_key(|c| (c.tenant, c.bucket, c.channel.clone(), c.reminder));
    let row = |tenant, channel: &str, reminder, bucket, count| crate::DueCount {
        tenant,
        channel: channel.into(),
        reminder,
        bucket,
        count,
    };
    assert_eq!(
        got,
        crate::DueCounts {
            counts: vec![
                row(DEFAULT_TENANT, "wechat", false, 0, 2),
                row(DEFAULT_TENANT, "wechat", true, 0, 1),
                row(DEFAULT_TENANT, "sms", false, 1, 2),
                row(OTHER_TENANT, "wechat", false, 2, 1),
            ],
            cut_at: None,
        }
    );

    // Four rows at most: the earliest four, and where the count stopped.
    let cut = store
        .due_counts(T0, T0 + 3 * MIN, MIN, 4)
        .await
        .expect("due_counts");
    assert_eq!(cut.counts.iter().map(|c| c.count).sum::<u64>(), 4);
    assert_eq!(cut.cut_at, Some(T0 + MIN + 5));
    assert!(cut.counts.iter().all(|c| c.bucket <= 1), "{cut:?}");
}
