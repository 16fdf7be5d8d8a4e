//! In-doubt single timers (docs/architecture.md, "The path of a timer"): marking timers firing before their
//! send, completing a marked timer, and resolving what a dead node left
//! marked, by channel, under the shard's lease.

use herald_core::TimerState;

use super::fixtures::*;
use super::support::*;
use crate::{
    Applied, CompletionOutcome, Fence, FiringMark, Holder, InDoubtResolved, RetentionKind,
    TimerFilter, WriteOp, WriteResult,
};

/// The mark of `timer`'s next attempt, at `at`, under `fence`.
fn mark(t: &crate::TimerRecord, fence: Option<Fence>, at: i64) -> FiringMark {
    FiringMark {
        timer_id: t.id,
        attempt: t.attempts + 1,
        fence,
        at,
        grant: None,
    }
}

/// Leases `shards` to a fresh node at time 0 and returns their fences.
async fn lease(store: &S, node: &str, shards: &[u16], now: i64) -> Vec<Fence> {
    store
        .acquire_shards(&Holder::new(node, 1), shards, now, 1_000)
        .await
        .expect("acquire")
        .iter()
        .map(|l| Fence {
            shard: l.shard,
            epoch: l.epoch,
        })
        .collect()
}

pub async fn a_marked_timer_leaves_the_due_index_and_completes(store: S) {
    let ts = insert_all(&store, [timer(100), timer(100), timer(100)]).await;
    let mut stale = mark(&ts[2], None, 150);
    stale.attempt = 2;
    let applied = store
        .mark_firing(vec![
            mark(&ts[0], None, 150),
            mark(&ts[1], None, 150),
            stale,
        ])
        .await
        .unwrap();
    assert_eq!(applied, [Applied::Yes, Applied::Yes, Applied::NotPending]);
    // Marked twice: the second finds it firing already.
    assert_eq!(
        store
            .mark_firing(vec![mark(&ts[0], None, 151)])
            .await
            .unwrap(),
        [Applied::NotPending]
    );
    let t = get(&store, ts[0].id).await;
    assert_eq!(
        (t.state, t.updated_at, t.attempts),
        (TimerState::Firing, 150, 0)
    );
    assert_eq!(ids(&all_due(&store, i64::MAX).await), [ts[2].id]);
    let ids_all: Vec<i64> = ts.iter().map(|t| t.id).collect();
    let pending: Vec<i64> = store
        .fetch_pending(&ids_all)
        .await
        .unwrap()
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(pending, [ts[2].id]);
    // A marked timer cannot be cancelled: it is being sent.
    assert!(matches!(
        cancel(&store, ts[0].id, 155).await,
        crate::WriteResult::NotCancellable(_)
    ));
    // Completions apply to a marked timer as to a pending one.
    let done = completion(&ts[0], 1, CompletionOutcome::Done, 180);
    let retry = completion(
        &ts[1],
        1,
        CompletionOutcome::Retry { next_due_at: 900 },
        180,
    );
    assert_eq!(
        store.complete(vec![done, retry]).await.unwrap(),
        [Applied::Yes, Applied::Yes]
    );
    assert_eq!(get(&store, ts[0].id).await.state, TimerState::Done);
    let r = get(&store, ts[1].id).await;
    assert_eq!(
        (r.state, r.attempts, r.due_at),
        (TimerState::Pending, 1, 900)
    );
    let mut due = ids(&all_due(&store, i64::MAX).await);
    due.sort_unstable();
    assert_eq!(due, [ts[1].id, ts[2].id]);
    let counts = counts(&store).await;
    assert_eq!(counts.get(&TimerState::Firing), None);
    assert_eq!(counts.get(&TimerState::Pending), Some(&2));
}

pub async fn a_timer_let_go_unsent_is_unmarked_back_to_pending(store: S) {
    let ts = insert_all(&store, [timer(100), timer(100)]).await;
    let marks = vec![mark(&ts[0], None, 150), mark(&ts[1], None, 150)];
    assert_eq!(store.mark_firing(marks).await.unwrap(), [Applied::Yes; 2]);
    assert!(all_due(&store, i64::MAX).await.is_empty());
    // The first went back; an id not firing (or unknown) is left alone.
    assert_eq!(
        store
            .unmark_firing(vec![ts[0].id, 999_999], 160)
            .await
            .unwrap(),
        1
    );
    assert_eq!(store.unmark_firing(vec![ts[0].id], 170).await.unwrap(), 0);
    let t = get(&store, ts[0].id).await;
    assert_eq!(
        (t.state, t.due_at, t.updated_at, t.attempts),
        (TimerState::Pending, 100, 160, 0)
    );
    assert_eq!(ids(&all_due(&store, i64::MAX).await), [ts[0].id]);
    assert_eq!(get(&store, ts[1].id).await.state, TimerState::Firing);
}

pub async fn a_mark_under_a_stale_lease_is_fenced_off(store: S) {
    let t = insert_one(&store, timer(1_000)).await;
    let old = lease(&store, "a", &[t.shard], 0).await[0];
    let new = lease(&store, "b", &[t.shard], 2_000).await[0];
    assert_eq!(
        store
            .mark_firing(vec![mark(&t, Some(old), 2_100)])
            .await
            .unwrap(),
        [Applied::Fenced]
    );
    assert_eq!(get(&store, t.id).await.state, TimerState::Pending);
    assert_eq!(
        store
            .mark_firing(vec![mark(&t, Some(new), 2_100)])
            .await
            .unwrap(),
        [Applied::Yes]
    );
    assert_eq!(get(&store, t.id).await.state, TimerState::Firing);
}

pub async fn resolving_ends_skipped_channels_in_doubt_and_resends_the_rest(store: S) {
    let mut skipped = timer(100);
    skipped.channel = "fcm".into();
    skipped.shard = 3;
    let mut resent = timer(200);
    resent.channel = "webhook".into();
    resent.shard = 3;
    let mut elsewhere = timer(300);
    elsewhere.channel = "fcm".into();
    elsewhere.shard = 4;
    let ts = insert_all(&store, [skipped, resent, elsewhere]).await;
    let fences = lease(&store, "a", &[3, 4], 0).await;
    let marks = ts
        .iter()
        .zip([fences[0], fences[0], fences[1]])
        .map(|(t, f)| mark(t, Some(f), 150))
        .collect();
    assert_eq!(store.mark_firing(marks).await.unwrap(), [Applied::Yes; 3]);
    // Node a dies; b takes shard 3 only once the leases expire.
    let taken = lease(&store, "b", &[3], 5_000).await;
    let skip = vec!["fcm".to_string(), "smtp".to_string()];
    // Under a's stale epoch nothing is resolved.
    assert_eq!(
        store
            .resolve_in_doubt(&fences[..1], &skip, 5_050)
            .await
            .unwrap(),
        InDoubtResolved::default()
    );
    assert_eq!(
        store.resolve_in_doubt(&taken, &skip, 5_100).await.unwrap(),
        InDoubtResolved {
            in_doubt: 1,
            resent: 1
        }
    );
    let d = get(&store, ts[0].id).await;
    assert_eq!(
        (d.state, d.attempts, d.updated_at, d.due_at),
        (TimerState::InDoubt, 1, 5_100, 100)
    );
    assert!(
        d.last_error
            .as_deref()
            .is_some_and(|e| e.contains("in doubt"))
    );
    let log = store.deliveries_for(ts[0].id).await.unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(
        (
            log[0].outcome.as_str(),
            log[0].attempt,
            log[0].started_at,
            log[0].finished_at
        ),
        ("in_doubt", 1, 150, 5_100)
    );
    let r = get(&store, ts[1].id).await;
    assert_eq!(
        (r.state, r.attempts, r.due_at),
        (TimerState::Pending, 0, 200)
    );
    assert!(store.deliveries_for(ts[1].id).await.unwrap().is_empty());
    // Shard 4 was not taken: its timer stays firing.
    assert_eq!(get(&store, ts[2].id).await.state, TimerState::Firing);
    assert_eq!(ids(&all_due(&store, i64::MAX).await), [ts[1].id]);
    // Resolving again finds nothing.
    assert_eq!(
        store.resolve_in_doubt(&taken, &skip, 5_200).await.unwrap(),
        InDoubtResolved::default()
    );
    // Counted, searchable, reported, and purged like any finished timer.
    let counts = counts(&store).await;
    assert_eq!(counts.get(&TimerState::InDoubt), Some(&1));
    assert_eq!(counts.get(&TimerState::Firing), Some(&1));
    let found = store
        .search_timers(
            DEFAULT_TENANT,
            &TimerFilter {
                state: Some(TimerState::InDoubt),
                ..TimerFilter::default()
            },
            None,
            10,
            crate::SortOrder::Asc,
        )
        .await
        .unwrap();
    assert_eq!(found.iter().map(|t| t.id).collect::<Vec<_>>(), [ts[0].id]);
    let all = store
        .search_timers(
            DEFAULT_TENANT,
            &TimerFilter::default(),
            None,
            10,
            crate::SortOrder::Asc,
        )
        .await
        .unwrap();
    assert_eq!(
        all.len(),
        3,
        "every state is searched, firing and in_doubt too"
    );
    let purged = store
        .purge(RetentionKind::Timers, 10_000, 100)
        .await
        .unwrap();
    assert_eq!(purged, 1, "the in-doubt timer, with its send log");
    assert!(store.get_timer(ts[0].id).await.unwrap().is_none());
    assert!(store.deliveries_for(ts[0].id).await.unwrap().is_empty());
    assert!(
        store.get_timer(ts[2].id).await.unwrap().is_some(),
        "firing stays"
    );
}

/// An operator's retry of an in-doubt timer: pending again, due now, its
/// attempts numbered on; the bulk retry takes in-doubt timers only when
/// asked for them by state.
pub async fn an_in_doubt_timer_can_be_retried(store: S) {
    let mut one = timer(100);
    one.channel = "fcm".into();
    one.shard = 3;
    let mut two = timer(110);
    two.channel = "fcm".into();
    two.shard = 3;
    let ts = insert_all(&store, [one, two]).await;
    let fences = lease(&store, "a", &[3], 0).await;
    let marks = ts.iter().map(|t| mark(t, Some(fences[0]), 150)).collect();
    assert_eq!(store.mark_firing(marks).await.unwrap(), [Applied::Yes; 2]);
    let taken = lease(&store, "b", &[3], 5_000).await;
    let skip = vec!["fcm".to_string()];
    let resolved = store.resolve_in_doubt(&taken, &skip, 5_100).await.unwrap();
    assert_eq!(resolved.in_doubt, 2);

    let retried = store
        .apply(vec![WriteOp::RetryTimer {
            tenant: DEFAULT_TENANT,
            id: ts[0].id,
            at: 6_000,
        }])
        .await
        .unwrap();
    match &retried[..] {
        [WriteResult::Retried(t)] => {
            assert_eq!((t.state, t.due_at), (TimerState::Pending, 6_000));
        }
        other => panic!("{other:?}"),
    }
    // The dead-and-failed default leaves the other one alone.
    let all = |state| WriteOp::RetryTimers {
        tenant: DEFAULT_TENANT,
        filter: crate::RetryFilter {
            state,
            ..crate::RetryFilter::default()
        },
        at: 6_100,
        limit: 100,
    };
    store.apply(vec![all(None)]).await.unwrap();
    assert_eq!(get(&store, ts[1].id).await.state, TimerState::InDoubt);
    store
        .apply(vec![all(Some(TimerState::InDoubt))])
        .await
        .unwrap();
    let t = get(&store, ts[1].id).await;
    assert_eq!((t.state, t.due_at), (TimerState::Pending, 6_100));
    let counts = counts(&store).await;
    assert_eq!(counts.get(&TimerState::InDoubt), None);
    assert_eq!(counts.get(&TimerState::Pending), Some(&2));
}
