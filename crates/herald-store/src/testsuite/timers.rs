//! Timers: inserts and idempotency keys, cancelling, the due index and its
//! keyset pages, fetching, completions and the send log, counts, concurrency.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use herald_core::{TimerKind, TimerState};

use super::fixtures::*;
use super::support::*;
use crate::{
    Applied, CompletionOutcome, DueCursor, DueEntry, NewTimer, TimerRecord, WriteOp, WriteResult,
};

pub async fn insert_then_get_round_trips(store: S) {
    let full = NewTimer {
        tenant: DEFAULT_TENANT,
        shard: u16::MAX,
        due_at: 1_700_000_000_123,
        priority: 9,
        kind: TimerKind::Timer,
        channel: "wecom".into(),
        recipient: "用户-42 'quoted' \"double\"".into(),
        message: r#"{"text":"héllo ✓","n":[1,2,3],"nested":{"a":null}}"#.into(),
        idempotency_key: Some("order-7781-reminder".into()),
        created_at: 1_699_999_999_001,
        traceparent: None,
        routing: None,
    };
    let bare = NewTimer {
        tenant: DEFAULT_TENANT,
        shard: 0,
        due_at: 0,
        priority: 0,
        kind: TimerKind::Timer,
        channel: "log".into(),
        recipient: String::new(),
        message: "{}".into(),
        idempotency_key: None,
        created_at: 0,
        traceparent: None,
        routing: None,
    };
    for t in [full, bare] {
        let rec = insert_one(&store, t.clone()).await;
        let expected = t.into_record(rec.id);
        assert_eq!(rec, expected, "Created record");
        assert_eq!(get(&store, rec.id).await, expected, "stored record");
    }
}

pub async fn get_unknown_timer_is_none(store: S) {
    assert_eq!(store.get_timer(1).await.unwrap(), None);
    let rec = insert_one(&store, timer(10)).await;
    assert_eq!(store.get_timer(rec.id + 1000).await.unwrap(), None);
    assert_eq!(store.get_timer(-1).await.unwrap(), None);
}

pub async fn ids_are_unique_and_increasing(store: S) {
    let mut all = Vec::new();
    for batch in 0..3 {
        // Due times deliberately out of order: ids follow insertion, not due_at.
        let recs = insert_all(&store, (0..50).map(|i| timer(10_000 - batch * 100 - i))).await;
        all.extend(recs.iter().map(|r| r.id));
    }
    assert_eq!(all.len(), 150);
    assert!(
        all.windows(2).all(|w| w[0] < w[1]),
        "ids not increasing: {all:?}"
    );
    for id in all {
        assert_eq!(get(&store, id).await.id, id);
    }
}

pub async fn idempotency_key_across_batches(store: S) {
    let first = insert_one(&store, keyed(100, "k")).await;
    // A different due time: the request is a retry of the first, which wins.
    let again = store.apply(inserts([keyed(999, "k")])).await.unwrap();
    assert_eq!(again, vec![WriteResult::Existing(first.clone())]);
    assert_eq!(get(&store, first.id).await.due_at, 100);
    assert_eq!(ids(&all_due(&store, i64::MAX).await), vec![first.id]);
}

pub async fn idempotency_key_within_one_batch(store: S) {
    let r = store
        .apply(inserts([keyed(100, "k"), timer(50), keyed(200, "k")]))
        .await
        .unwrap();
    assert_eq!(r.len(), 3);
    let first = created(&r[0]);
    created(&r[1]);
    assert_eq!(r[2], WriteResult::Existing(first.clone()));
    let due = all_due(&store, i64::MAX).await;
    assert_eq!(due.len(), 2);
    assert!(due.iter().any(|e| e.id == first.id && e.due_at == 100));
}

pub async fn distinct_keys_make_distinct_timers(store: S) {
    let a = insert_one(&store, keyed(100, "a")).await;
    let b = insert_one(&store, keyed(100, "b")).await;
    let r = store
        .apply(inserts([keyed(100, "c"), keyed(100, "A")]))
        .await
        .unwrap();
    let c = created(&r[0]);
    let upper_a = created(&r[1]); // keys are case-sensitive
    let set: HashSet<i64> = [a.id, b.id, c.id, upper_a.id].into();
    assert_eq!(set.len(), 4);
    assert_eq!(all_due(&store, i64::MAX).await.len(), 4);
}

pub async fn timers_without_key_are_always_new(store: S) {
    let same = timer(100);
    let r = store
        .apply(inserts([same.clone(), same.clone()]))
        .await
        .unwrap();
    let a = created(&r[0]);
    let b = created(&r[1]);
    let c = insert_one(&store, same).await;
    assert!(a.id != b.id && b.id != c.id && a.id != c.id);
    assert_eq!(all_due(&store, i64::MAX).await.len(), 3);
}

pub async fn existing_is_the_stored_timer_as_it_is_now(store: S) {
    let first = insert_one(&store, keyed(100, "k")).await;
    let cancelled = match cancel(&store, first.id, 150).await {
        WriteResult::Cancelled(r) => r,
        other => panic!("expected Cancelled, got {other:?}"),
    };
    // The key still belongs to the cancelled timer: nothing new is created.
    let r = store.apply(inserts([keyed(300, "k")])).await.unwrap();
    assert_eq!(r, vec![WriteResult::Existing(cancelled.clone())]);
    assert_eq!(cancelled.state, TimerState::Cancelled);
    assert!(all_due(&store, i64::MAX).await.is_empty());
}

pub async fn cancel_pending_timer(store: S) {
    let rec = insert_one(&store, keyed(500, "k")).await;
    let expected = TimerRecord {
        tenant: DEFAULT_TENANT,
        state: TimerState::Cancelled,
        updated_at: 2_000,
        ..rec.clone()
    };
    assert_eq!(
        cancel(&store, rec.id, 2_000).await,
        WriteResult::Cancelled(expected.clone())
    );
    assert_eq!(get(&store, rec.id).await, expected);
}

pub async fn cancel_twice_is_not_cancellable(store: S) {
    let rec = insert_one(&store, timer(500)).await;
    let first = match cancel(&store, rec.id, 2_000).await {
        WriteResult::Cancelled(r) => r,
        other => panic!("expected Cancelled, got {other:?}"),
    };
    // The second cancel changes nothing, not even updated_at.
    assert_eq!(
        cancel(&store, rec.id, 3_000).await,
        WriteResult::NotCancellable(first.clone())
    );
    assert_eq!(get(&store, rec.id).await, first);
}

pub async fn cancel_unknown_is_not_found(store: S) {
    assert_eq!(cancel(&store, 42, 1).await, WriteResult::NotFound);
    let rec = insert_one(&store, timer(500)).await;
    assert_eq!(cancel(&store, rec.id + 1, 1).await, WriteResult::NotFound);
    assert_eq!(get(&store, rec.id).await.state, TimerState::Pending);
}

pub async fn cancel_finished_timer_is_not_cancellable(store: S) {
    let rec = insert_one(&store, timer(500)).await;
    let applied = store
        .complete(vec![completion(&rec, 1, CompletionOutcome::Done, 600)])
        .await
        .unwrap();
    assert_eq!(applied, vec![Applied::Yes]);
    let done = get(&store, rec.id).await;
    assert_eq!(done.state, TimerState::Done);
    assert_eq!(
        cancel(&store, rec.id, 700).await,
        WriteResult::NotCancellable(done.clone())
    );
    assert_eq!(get(&store, rec.id).await, done);
}

pub async fn cancelled_timers_are_not_due_nor_fetched(store: S) {
    let recs = insert_all(&store, [timer(100), timer(100), timer(200)]).await;
    cancel(&store, recs[1].id, 50).await;
    let due = all_due(&store, i64::MAX).await;
    assert_eq!(ids(&due), vec![recs[0].id, recs[2].id]);
    let all: Vec<i64> = recs.iter().map(|r| r.id).collect();
    let mut fetched: Vec<i64> = store
        .fetch_pending(&all)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    fetched.sort_unstable();
    assert_eq!(fetched, vec![recs[0].id, recs[2].id]);
}

pub async fn batch_results_come_in_op_order(store: S) {
    let pending = insert_one(&store, keyed(100, "old")).await;
    let r = store
        .apply(vec![
            WriteOp::InsertTimer(timer(300)),
            WriteOp::CancelTimer {
                tenant: DEFAULT_TENANT,
                id: 999_999,
                at: 10,
            },
            WriteOp::InsertTimer(keyed(400, "old")),
            WriteOp::CancelTimer {
                tenant: DEFAULT_TENANT,
                id: pending.id,
                at: 20,
            },
            WriteOp::CancelTimer {
                tenant: DEFAULT_TENANT,
                id: pending.id,
                at: 30,
            },
            WriteOp::InsertTimer(keyed(500, "new")),
        ])
        .await
        .unwrap();
    assert_eq!(r.len(), 6);
    let a = created(&r[0]);
    assert_eq!(a.due_at, 300);
    assert_eq!(r[1], WriteResult::NotFound);
    assert_eq!(r[2], WriteResult::Existing(pending.clone()));
    let cancelled = TimerRecord {
        tenant: DEFAULT_TENANT,
        state: TimerState::Cancelled,
        updated_at: 20,
        ..pending.clone()
    };
    assert_eq!(r[3], WriteResult::Cancelled(cancelled.clone()));
    assert_eq!(r[4], WriteResult::NotCancellable(cancelled));
    let b = created(&r[5]);
    assert!(a.id < b.id);
    assert_eq!(ids(&all_due(&store, i64::MAX).await), vec![a.id, b.id]);
}

pub async fn empty_batches_are_fine(store: S) {
    assert!(store.apply(Vec::new()).await.unwrap().is_empty());
    assert!(store.complete(Vec::new()).await.unwrap().is_empty());
    assert!(store.fetch_pending(&[]).await.unwrap().is_empty());
    assert!(counts(&store).await.is_empty());
}

pub async fn load_due_orders_by_due_at_then_id(store: S) {
    let recs = insert_all(
        &store,
        [500, 300, 300, 900, -100, 300, 0].into_iter().map(timer),
    )
    .await;
    let mut expected: Vec<(i64, i64)> = recs.iter().map(|r| (r.due_at, r.id)).collect();
    expected.sort_unstable();
    let due = all_due(&store, i64::MAX).await;
    let got: Vec<(i64, i64)> = due.iter().map(|e| (e.due_at, e.id)).collect();
    assert_eq!(got, expected);
    for e in &due {
        let r = recs.iter().find(|r| r.id == e.id).unwrap();
        assert_eq!((e.shard, e.priority), (r.shard, r.priority));
    }
}

pub async fn load_due_until_is_exclusive(store: S) {
    let recs = insert_all(&store, [99, 100, 100, 101].into_iter().map(timer)).await;
    assert_eq!(ids(&all_due(&store, 100).await), vec![recs[0].id]);
    assert_eq!(
        ids(&all_due(&store, 101).await),
        vec![recs[0].id, recs[1].id, recs[2].id]
    );
    assert!(all_due(&store, 99).await.is_empty());
    // With a cursor too: the rest of the cursor's millisecond is cut by `until`.
    let after = Some(recs[1].cursor());
    assert!(
        store
            .load_due(&all_shards(), after, 100, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        ids(&store.load_due(&all_shards(), after, 101, 10).await.unwrap()),
        vec![recs[2].id]
    );
}

pub async fn load_due_respects_limit(store: S) {
    let recs = insert_all(&store, (0..20).map(|i| timer(i % 4))).await;
    let mut expected: Vec<(i64, i64)> = recs.iter().map(|r| (r.due_at, r.id)).collect();
    expected.sort_unstable();
    for limit in [1, 5, 20, 21] {
        let due = store
            .load_due(&all_shards(), None, i64::MAX, limit)
            .await
            .unwrap();
        assert_eq!(due.len(), limit.min(20));
        let got: Vec<(i64, i64)> = due.iter().map(|e| (e.due_at, e.id)).collect();
        assert_eq!(got, expected[..limit.min(20)]);
    }
    assert!(
        store
            .load_due(&all_shards(), None, i64::MAX, 0)
            .await
            .unwrap()
            .is_empty()
    );
    let first = DueCursor {
        due_at: expected[0].0,
        id: expected[0].1,
    };
    assert!(
        store
            .load_due(&all_shards(), Some(first), i64::MAX, 0)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .load_due(&all_shards(), Some(first), i64::MAX, 3)
            .await
            .unwrap()
            .len(),
        3
    );
}

pub async fn load_due_keyset_pages_see_every_timer_once(store: S) {
    // Many timers share a due time, so pages start and end inside a millisecond.
    let recs = insert_all(&store, (0..240).map(|i| timer(1_000 + (i % 4) * 10))).await;
    // Some leave the pending set: cancelled, delivered, or retried past `until`.
    let mut gone = HashSet::new();
    let mut ops = Vec::new();
    for r in recs.iter().step_by(9) {
        ops.push(WriteOp::CancelTimer {
            tenant: DEFAULT_TENANT,
            id: r.id,
            at: 1,
        });
        gone.insert(r.id);
    }
    store.apply(ops).await.unwrap();
    let mut batch = Vec::new();
    let cancelled = gone.clone();
    for r in recs
        .iter()
        .skip(4)
        .step_by(11)
        .filter(|r| !cancelled.contains(&r.id))
    {
        let outcome = if r.id % 2 == 0 {
            CompletionOutcome::Done
        } else {
            CompletionOutcome::Retry { next_due_at: 9_999 }
        };
        batch.push(completion(r, 1, outcome, 2));
        gone.insert(r.id);
    }
    assert!(
        store
            .complete(batch)
            .await
            .unwrap()
            .iter()
            .all(|&b| b == Applied::Yes)
    );

    let mut expected: Vec<(i64, i64)> = recs
        .iter()
        .filter(|r| !gone.contains(&r.id))
        .map(|r| (r.due_at, r.id))
        .collect();
    expected.sort_unstable();
    for page in [1, 7, 60, 500] {
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let due = store
                .load_due(&all_shards(), after, 5_000, page)
                .await
                .unwrap();
            assert!(due.len() <= page);
            let Some(last) = due.last() else { break };
            after = Some(last.cursor());
            seen.extend(due.iter().map(|e| (e.due_at, e.id)));
            // A cursor that does not move would loop forever.
            assert!(
                seen.len() <= expected.len(),
                "page size {page}: pages repeat"
            );
        }
        assert_eq!(seen, expected, "page size {page}");
    }
}

pub async fn load_due_cursor_past_the_end_is_empty(store: S) {
    let recs = insert_all(&store, [10, 20, 20].into_iter().map(timer)).await;
    let last = recs[2].cursor();
    assert!(
        store
            .load_due(&all_shards(), Some(last), i64::MAX, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let beyond = DueCursor {
        due_at: 20,
        id: i64::MAX,
    };
    assert!(
        store
            .load_due(&all_shards(), Some(beyond), i64::MAX, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let before_all = DueCursor {
        due_at: i64::MIN,
        id: i64::MIN,
    };
    assert_eq!(
        store
            .load_due(&all_shards(), Some(before_all), i64::MAX, 10)
            .await
            .unwrap()
            .len(),
        3
    );
    // A cursor between ids at the same due time.
    let between = DueCursor {
        due_at: 20,
        id: recs[1].id,
    };
    assert_eq!(
        ids(&store
            .load_due(&all_shards(), Some(between), i64::MAX, 10)
            .await
            .unwrap()),
        vec![recs[2].id]
    );
}

pub async fn load_due_sees_a_retry_at_its_new_time(store: S) {
    let recs = insert_all(&store, [100, 200].into_iter().map(timer)).await;
    let retry = CompletionOutcome::Retry { next_due_at: 300 };
    let applied = store
        .complete(vec![completion(&recs[0], 1, retry, 150)])
        .await
        .unwrap();
    assert_eq!(applied, vec![Applied::Yes]);
    let due = all_due(&store, i64::MAX).await;
    let got: Vec<(i64, i64)> = due.iter().map(|e| (e.due_at, e.id)).collect();
    assert_eq!(got, vec![(200, recs[1].id), (300, recs[0].id)]);
    assert_eq!(ids(&all_due(&store, 300).await), vec![recs[1].id]);
}

/// A node that owns some shards pages through exactly their timers.
pub async fn load_due_only_returns_owned_shards(store: S) {
    // Shards follow due_at % 16 in the fixtures; many timers share a due time.
    let recs = insert_all(&store, (0..320).map(|i| timer(2_000 + (i % 40)))).await;
    let mut owned = herald_core::ShardSet::none(16);
    for s in [1, 5, 9, 15] {
        owned.insert(s);
    }
    let mut expected: Vec<i64> = recs
        .iter()
        .filter(|r| owned.contains(r.shard))
        .map(|r| r.id)
        .collect();
    expected.sort_by_key(|id| recs.iter().find(|r| r.id == *id).map(|r| (r.due_at, r.id)));
    let mut got = Vec::new();
    let mut after = None;
    loop {
        let page = store.load_due(&owned, after, i64::MAX, 7).await.unwrap();
        assert!(
            page.iter().all(|e| owned.contains(e.shard)),
            "a page held another shard"
        );
        got.extend(page.iter().map(|e| e.id));
        match page.last() {
            Some(last) if page.len() == 7 => after = Some(last.cursor()),
            _ => break,
        }
        assert!(got.len() <= expected.len(), "paging does not end");
    }
    assert_eq!(got, expected);
    // A set smaller than the shards stored: timers beyond it are not owned
    // (and reading them is not an error).
    let mut small = herald_core::ShardSet::none(8);
    small.insert(1);
    small.insert(5);
    let page = store.load_due(&small, None, i64::MAX, 1_000).await.unwrap();
    let want = recs.iter().filter(|r| [1, 5].contains(&r.shard)).count();
    assert_eq!(page.len(), want);
    assert!(page.iter().all(|e| [1, 5].contains(&e.shard)));
    let empty = herald_core::ShardSet::none(16);
    assert!(
        store
            .load_due(&empty, None, i64::MAX, 100)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn fetch_pending_returns_only_pending(store: S) {
    let recs = insert_all(&store, (0..6).map(|i| keyed(100 + i, &format!("k{i}")))).await;
    cancel(&store, recs[0].id, 5).await;
    let batch = vec![
        completion(&recs[1], 1, CompletionOutcome::Done, 200),
        completion(&recs[2], 1, CompletionOutcome::Failed, 200),
        completion(&recs[3], 1, CompletionOutcome::Dead, 200),
        completion(
            &recs[4],
            1,
            CompletionOutcome::Retry { next_due_at: 900 },
            200,
        ),
    ];
    store.complete(batch).await.unwrap();
    let all: Vec<i64> = recs.iter().map(|r| r.id).collect();
    let mut fetched = store.fetch_pending(&all).await.unwrap();
    fetched.sort_by_key(|r| r.id);
    let expected = vec![get(&store, recs[4].id).await, recs[5].clone()];
    assert_eq!(fetched, expected);
    assert_eq!(fetched[0].due_at, 900);
    assert_eq!(fetched[0].attempts, 1);
}

pub async fn fetch_pending_ignores_unknown_ids_and_empty_input(store: S) {
    assert!(store.fetch_pending(&[]).await.unwrap().is_empty());
    assert!(store.fetch_pending(&[1, 2, 3]).await.unwrap().is_empty());
    let rec = insert_one(&store, timer(10)).await;
    let got = store
        .fetch_pending(&[rec.id + 100, rec.id, -5, rec.id])
        .await
        .unwrap();
    assert_eq!(got, vec![rec]);
}

pub async fn fetch_pending_handles_many_ids(store: S) {
    let mut recs = Vec::new();
    for chunk in 0..3 {
        recs.extend(insert_all(&store, (0..400).map(|i| timer(chunk * 1000 + i))).await);
    }
    let cancelled: Vec<WriteOp> = recs
        .iter()
        .step_by(100)
        .map(|r| WriteOp::CancelTimer {
            tenant: DEFAULT_TENANT,
            id: r.id,
            at: 1,
        })
        .collect();
    let n_cancelled = cancelled.len();
    store.apply(cancelled).await.unwrap();
    // Unsorted, with repeats and unknown ids mixed in.
    let mut ask: Vec<i64> = recs.iter().rev().map(|r| r.id).collect();
    ask.extend(recs.iter().take(50).map(|r| r.id));
    ask.extend((1..=30).map(|i| -i));
    let got = store.fetch_pending(&ask).await.unwrap();
    assert_eq!(got.len(), recs.len() - n_cancelled);
    let unique: HashSet<i64> = got.iter().map(|r| r.id).collect();
    assert_eq!(unique.len(), got.len(), "a timer returned twice");
    assert!(got.iter().all(|r| r.state == TimerState::Pending));
    for r in &got {
        let orig = recs.iter().find(|o| o.id == r.id).unwrap();
        assert_eq!(r, orig);
    }
}

pub async fn complete_done(store: S) {
    let rec = insert_one(&store, keyed(100, "k")).await;
    let c = completion(&rec, 1, CompletionOutcome::Done, 180);
    assert_eq!(store.complete(vec![c]).await.unwrap(), vec![Applied::Yes]);
    let expected = TimerRecord {
        tenant: DEFAULT_TENANT,
        state: TimerState::Done,
        attempts: 1,
        last_error: None,
        updated_at: 180,
        delivered_at: Some(180),
        ..rec.clone()
    };
    assert_eq!(get(&store, rec.id).await, expected);
    assert!(all_due(&store, i64::MAX).await.is_empty());
}

/// Throttling and quiet hours push a timer back without counting the
/// attempt: the send log has the row, the timer keeps its attempt count,
/// and the next attempt carries the same number.
pub async fn deferrals_do_not_use_attempts(store: S) {
    use crate::DeferReason;
    let rec = insert_one(&store, timer(100)).await;
    let throttled = completion(
        &rec,
        1,
        CompletionOutcome::Deferred {
            next_due_at: 5_000,
            reason: DeferReason::Throttled,
        },
        150,
    );
    assert_eq!(
        store.complete(vec![throttled]).await.unwrap(),
        vec![Applied::Yes]
    );
    let t = get(&store, rec.id).await;
    assert_eq!(
        (t.state, t.attempts, t.due_at),
        (TimerState::Pending, 0, 5_000)
    );
    let quiet = completion(
        &rec,
        1,
        CompletionOutcome::Deferred {
            next_due_at: 9_000,
            reason: DeferReason::QuietHours,
        },
        5_100,
    );
    assert_eq!(
        store.complete(vec![quiet]).await.unwrap(),
        vec![Applied::Yes]
    );
    assert_eq!(
        all_due(&store, i64::MAX).await,
        vec![DueEntry {
            tenant: DEFAULT_TENANT,
            id: rec.id,
            due_at: 9_000,
            shard: rec.shard,
            priority: rec.priority
        }]
    );
    // The attempt after the deferrals is still attempt 1.
    let done = completion(&rec, 1, CompletionOutcome::Done, 9_100);
    assert_eq!(
        store.complete(vec![done]).await.unwrap(),
        vec![Applied::Yes]
    );
    let t = get(&store, rec.id).await;
    assert_eq!((t.state, t.attempts), (TimerState::Done, 1));
    let log: Vec<String> = store
        .deliveries_for(rec.id)
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.outcome)
        .collect();
    assert_eq!(log, ["throttled", "deferred", "delivered"]);
}

pub async fn complete_retry_then_done(store: S) {
    let rec = insert_one(&store, timer(100)).await;
    let r1 = completion(
        &rec,
        1,
        CompletionOutcome::Retry { next_due_at: 1_100 },
        150,
    );
    assert_eq!(store.complete(vec![r1]).await.unwrap(), vec![Applied::Yes]);
    let after_retry = get(&store, rec.id).await;
    assert_eq!(
        after_retry,
        TimerRecord {
            tenant: DEFAULT_TENANT,
            due_at: 1_100,
            attempts: 1,
            last_error: Some("attempt 1 failed".into()),
            updated_at: 150,
            ..rec.clone()
        }
    );
    assert_eq!(
        all_due(&store, i64::MAX).await,
        vec![DueEntry {
            tenant: DEFAULT_TENANT,
            id: rec.id,
            due_at: 1_100,
            shard: rec.shard,
            priority: rec.priority
        }]
    );
    let r2 = completion(
        &rec,
        2,
        CompletionOutcome::Retry { next_due_at: 2_100 },
        1_150,
    );
    let done = completion(&rec, 3, CompletionOutcome::Done, 2_150);
    assert_eq!(store.complete(vec![r2]).await.unwrap(), vec![Applied::Yes]);
    assert_eq!(
        store.complete(vec![done]).await.unwrap(),
        vec![Applied::Yes]
    );
    let fin = get(&store, rec.id).await;
    assert_eq!(fin.state, TimerState::Done);
    assert_eq!(fin.attempts, 3);
    assert_eq!(fin.due_at, 2_100);
    assert_eq!(fin.last_error, None);
    assert_eq!(fin.delivered_at, Some(2_150));
    assert_eq!(fin.updated_at, 2_150);
}

/// A fallback route's step: the outcome's send-log row (with its step) and
/// the move to the next step are one write; an `unread` step finds the step
/// before read by its receipt, and a `read` outcome ends the timer done.
pub async fn a_route_step_moves_the_timer_on_in_one_write(store: S) {
    let mut t = timer(100);
    t.routing = Some(r#"{"to":"wechat","route":[{"channel":"c","channel_type":"wechat"},{"channel":"mail","channel_type":"email","on":["unread"],"after_ms":100}]}"#.into());
    let rec = insert_one(&store, t).await;
    assert_eq!(rec.route_step(), Some(0));
    let next_routing = r#"{"to":"email","route":[],"step":1,"check_read":true}"#.to_string();
    let mut first = completion(&rec, 1, CompletionOutcome::Done, 150);
    first.step = Some(0);
    first.next = Some(crate::NextStep {
        due_at: 250,
        channel: "mail".into(),
        routing: next_routing.clone(),
    });
    assert_eq!(
        store.complete(vec![first]).await.unwrap(),
        vec![Applied::Yes]
    );
    let moved = get(&store, rec.id).await;
    assert_eq!(
        moved,
        TimerRecord {
            tenant: DEFAULT_TENANT,
            due_at: 250,
            attempts: 1,
            attempt_base: 1,
            channel: "mail".into(),
            routing: Some(next_routing),
            delivered_at: Some(150),
            last_error: None,
            updated_at: 150,
            ..rec.clone()
        }
    );
    assert_eq!(all_due(&store, i64::MAX).await.len(), 1);
    let log = store.deliveries_for(rec.id).await.unwrap();
    assert_eq!(
        (log.len(), log[0].step, log[0].outcome.as_str()),
        (1, Some(0), "delivered")
    );
    assert!(!store.read_at_step(rec.id, 0).await.unwrap());
    let on = crate::ReceiptOn::Delivery(log[0].id);
    assert!(
        store
            .record_receipt(on, crate::ReceiptEvent::Read, 200)
            .await
            .unwrap()
    );
    assert!(store.read_at_step(rec.id, 0).await.unwrap());
    assert!(!store.read_at_step(rec.id, 1).await.unwrap());

    let mut read = completion(&moved, 2, CompletionOutcome::Read, 260);
    read.error = None;
    read.step = Some(1);
    assert_eq!(
        store.complete(vec![read]).await.unwrap(),
        vec![Applied::Yes]
    );
    let fin = get(&store, rec.id).await;
    assert_eq!(
        (fin.state, fin.attempts, fin.delivered_at, fin.last_error),
        (TimerState::Done, 2, Some(150), None)
    );
    let log = store.deliveries_for(rec.id).await.unwrap();
    assert_eq!((log[1].step, log[1].outcome.as_str()), (Some(1), "read"));
    assert!(all_due(&store, i64::MAX).await.is_empty());
}

async fn final_outcome_keeps_error(store: S, outcome: CompletionOutcome, state: TimerState) {
    let rec = insert_one(&store, timer(100)).await;
    let retry = completion(&rec, 1, CompletionOutcome::Retry { next_due_at: 200 }, 150);
    let mut last = completion(&rec, 2, outcome, 250);
    last.error = Some("HTTP 410 gone".into());
    assert_eq!(
        store.complete(vec![retry]).await.unwrap(),
        vec![Applied::Yes]
    );
    assert_eq!(
        store.complete(vec![last]).await.unwrap(),
        vec![Applied::Yes]
    );
    let expected = TimerRecord {
        tenant: DEFAULT_TENANT,
        state,
        due_at: 200,
        attempts: 2,
        last_error: Some("HTTP 410 gone".into()),
        updated_at: 250,
        delivered_at: None,
        ..rec.clone()
    };
    assert_eq!(get(&store, rec.id).await, expected);
    assert!(all_due(&store, i64::MAX).await.is_empty());
    assert!(store.fetch_pending(&[rec.id]).await.unwrap().is_empty());
}

pub async fn complete_failed_keeps_error(store: S) {
    final_outcome_keeps_error(store, CompletionOutcome::Failed, TimerState::Failed).await;
}

pub async fn complete_dead_keeps_error(store: S) {
    final_outcome_keeps_error(store, CompletionOutcome::Dead, TimerState::Dead).await;
}

pub async fn duplicate_completion_is_logged_but_not_applied(store: S) {
    let rec = insert_one(&store, timer(100)).await;
    let retry = completion(&rec, 1, CompletionOutcome::Retry { next_due_at: 500 }, 150);
    assert_eq!(
        store.complete(vec![retry]).await.unwrap(),
        vec![Applied::Yes]
    );
    let after_first = get(&store, rec.id).await;
    // The same attempt reported again (e.g. by a node that lost its lease).
    let dup = completion(&rec, 1, CompletionOutcome::Done, 160);
    assert_eq!(
        store.complete(vec![dup]).await.unwrap(),
        vec![Applied::NotPending]
    );
    assert_eq!(get(&store, rec.id).await, after_first);
    let log = store.deliveries_for(rec.id).await.unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!((log[0].attempt, log[0].outcome.as_str()), (1, "retry"));
    assert_eq!((log[1].attempt, log[1].outcome.as_str()), (1, "delivered"));
}

pub async fn out_of_order_attempt_is_not_applied(store: S) {
    let rec = insert_one(&store, timer(100)).await;
    let skip_ahead = completion(&rec, 2, CompletionOutcome::Done, 150);
    let zero = completion(&rec, 0, CompletionOutcome::Done, 150);
    assert_eq!(
        store.complete(vec![skip_ahead, zero]).await.unwrap(),
        vec![Applied::NotPending, Applied::NotPending]
    );
    assert_eq!(get(&store, rec.id).await, rec);
    assert_eq!(store.deliveries_for(rec.id).await.unwrap().len(), 2);
}

pub async fn completion_does_not_resurrect_a_cancelled_timer(store: S) {
    let rec = insert_one(&store, timer(100)).await;
    let cancelled = match cancel(&store, rec.id, 120).await {
        WriteResult::Cancelled(r) => r,
        other => panic!("expected Cancelled, got {other:?}"),
    };
    for outcome in [
        CompletionOutcome::Retry { next_due_at: 900 },
        CompletionOutcome::Done,
        CompletionOutcome::Dead,
    ] {
        let c = completion(&rec, 1, outcome, 150);
        assert_eq!(
            store.complete(vec![c]).await.unwrap(),
            vec![Applied::NotPending]
        );
    }
    assert_eq!(get(&store, rec.id).await, cancelled);
    assert!(all_due(&store, i64::MAX).await.is_empty());
    assert_eq!(store.deliveries_for(rec.id).await.unwrap().len(), 3);
}

pub async fn completion_for_unknown_timer_is_logged(store: S) {
    let ghost = TimerRecord {
        tenant: DEFAULT_TENANT,
        id: 777_777,
        ..fake_record()
    };
    let c = completion(&ghost, 1, CompletionOutcome::Done, 10);
    assert_eq!(
        store.complete(vec![c]).await.unwrap(),
        vec![Applied::NotPending]
    );
    assert_eq!(store.get_timer(ghost.id).await.unwrap(), None);
    let log = store.deliveries_for(ghost.id).await.unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].timer_id, ghost.id);
}

fn fake_record() -> TimerRecord {
    let t = timer(5);
    TimerRecord {
        tenant: DEFAULT_TENANT,
        id: 0,
        shard: t.shard,
        due_at: t.due_at,
        priority: t.priority,
        kind: t.kind,
        state: TimerState::Pending,
        channel: t.channel,
        recipient: t.recipient,
        message: t.message,
        idempotency_key: None,
        attempts: 0,
        last_error: None,
        created_at: t.created_at,
        updated_at: t.created_at,
        delivered_at: None,
        attempt_base: 0,
        traceparent: None,
        routing: None,
    }
}

pub async fn completions_in_one_batch_apply_in_order(store: S) {
    let recs = insert_all(&store, [100, 100].into_iter().map(timer)).await;
    let (a, b) = (&recs[0], &recs[1]);
    let batch = vec![
        completion(a, 1, CompletionOutcome::Retry { next_due_at: 400 }, 150),
        completion(b, 1, CompletionOutcome::Done, 155),
        completion(a, 2, CompletionOutcome::Done, 160),
        completion(b, 1, CompletionOutcome::Failed, 165), // stale
    ];
    assert_eq!(
        store.complete(batch).await.unwrap(),
        vec![
            Applied::Yes,
            Applied::Yes,
            Applied::Yes,
            Applied::NotPending
        ]
    );
    let a_now = get(&store, a.id).await;
    assert_eq!(
        (a_now.state, a_now.attempts, a_now.due_at),
        (TimerState::Done, 2, 400)
    );
    let b_now = get(&store, b.id).await;
    assert_eq!((b_now.state, b_now.attempts), (TimerState::Done, 1));
    assert_eq!(b_now.delivered_at, Some(155));
}

pub async fn deliveries_for_lists_every_attempt_in_order(store: S) {
    let recs = insert_all(&store, [keyed(100, "dk"), timer(100)]).await;
    let rec = &recs[0];
    let other = &recs[1];
    let mut sent = vec![
        completion(rec, 1, CompletionOutcome::Retry { next_due_at: 200 }, 150),
        completion(rec, 2, CompletionOutcome::Retry { next_due_at: 300 }, 250),
        completion(rec, 3, CompletionOutcome::Done, 350),
    ];
    sent[0].provider_msgid = None;
    sent[0].status = None;
    sent[1].error = Some("timeout".into());
    for c in &sent {
        // One completion per batch, interleaved with another timer's.
        let noise = completion(other, 1, CompletionOutcome::Failed, c.finished_at);
        store.complete(vec![c.clone(), noise]).await.unwrap();
    }
    let log = store.deliveries_for(rec.id).await.unwrap();
    assert_eq!(log.len(), 3);
    for (row, c) in log.iter().zip(&sent) {
        assert_eq!(row.timer_id, rec.id);
        assert_eq!(row.attempt, c.attempt);
        assert_eq!(row.channel, c.channel);
        assert_eq!(row.outcome, c.outcome.as_str());
        assert_eq!(row.idempotency_key, "dk");
        assert_eq!(row.provider_msgid, c.provider_msgid);
        assert_eq!(row.status, c.status);
        assert_eq!(row.error, c.error);
        assert_eq!(row.started_at, c.started_at);
        assert_eq!(row.finished_at, c.finished_at);
        assert_eq!((row.final_status.as_deref(), row.final_at), (None, None));
    }
    assert!(log.windows(2).all(|w| w[0].id < w[1].id));
    let other_log = store.deliveries_for(other.id).await.unwrap();
    assert_eq!(other_log.len(), 3);
    assert_eq!(other_log[0].idempotency_key, other.delivery_key());
    assert!(store.deliveries_for(999_999).await.unwrap().is_empty());
}

pub async fn count_by_state_counts_each_state(store: S) {
    assert!(counts(&store).await.is_empty());
    let recs = insert_all(&store, (0..10).map(timer)).await;
    assert_eq!(
        counts(&store).await,
        HashMap::from([(TimerState::Pending, 10)])
    );
    cancel(&store, recs[0].id, 1).await;
    cancel(&store, recs[1].id, 1).await;
    store
        .complete(vec![
            completion(&recs[2], 1, CompletionOutcome::Done, 5),
            completion(&recs[3], 1, CompletionOutcome::Done, 5),
            completion(&recs[4], 1, CompletionOutcome::Done, 5),
            completion(&recs[5], 1, CompletionOutcome::Failed, 5),
            completion(&recs[6], 1, CompletionOutcome::Dead, 5),
            completion(&recs[7], 1, CompletionOutcome::Retry { next_due_at: 50 }, 5),
        ])
        .await
        .unwrap();
    assert_eq!(
        counts(&store).await,
        HashMap::from([
            (TimerState::Pending, 3),
            (TimerState::Cancelled, 2),
            (TimerState::Done, 3),
            (TimerState::Failed, 1),
            (TimerState::Dead, 1),
        ])
    );
}

pub async fn init_shards_first_value_sticks(store: S) {
    assert_eq!(store.init_shards(64).await.unwrap(), 64);
    assert_eq!(store.init_shards(128).await.unwrap(), 64);
    assert_eq!(store.init_shards(1).await.unwrap(), 64);
    assert_eq!(store.init_shards(64).await.unwrap(), 64);
}

pub async fn concurrent_applies_all_land(store: S) {
    const TASKS: i64 = 4;
    const BATCHES: i64 = 10;
    const PER_BATCH: i64 = 100;
    let mut handles = Vec::new();
    for task in 0..TASKS {
        let store = Arc::clone(&store);
        handles.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for batch in 0..BATCHES {
                let timers = (0..PER_BATCH).map(|i| {
                    let n = (task * BATCHES + batch) * PER_BATCH + i;
                    // Every task also races the others for the same shared keys.
                    if i == 0 {
                        keyed(n, &format!("shared-{batch}"))
                    } else {
                        keyed(n, &format!("t{task}-b{batch}-{i}"))
                    }
                });
                let results = store
                    .apply(inserts(timers))
                    .await
                    .expect("concurrent apply");
                assert_eq!(results.len(), PER_BATCH as usize);
                for r in results {
                    match r {
                        WriteResult::Created(t) | WriteResult::Existing(t) => ids.push(t.id),
                        other => panic!("unexpected {other:?}"),
                    }
                }
            }
            ids
        }));
    }
    let mut all = HashSet::new();
    for h in handles {
        all.extend(h.await.expect("task"));
    }
    // Unique keys: TASKS * BATCHES * (PER_BATCH - 1) private + BATCHES shared.
    let expected = (TASKS * BATCHES * (PER_BATCH - 1) + BATCHES) as usize;
    assert_eq!(all.len(), expected);
    assert_eq!(
        counts(&store).await,
        HashMap::from([(TimerState::Pending, expected as u64)])
    );
    assert_eq!(all_due(&store, i64::MAX).await.len(), expected);
}

pub async fn a_batch_becomes_visible_at_once(store: S) {
    const BATCH: u64 = 250;
    const BATCHES: u64 = 20;
    let writer = {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            for b in 0..BATCHES {
                let timers = (0..BATCH).map(|i| timer((b * BATCH + i) as i64));
                let r = store.apply(inserts(timers)).await.expect("apply");
                assert_eq!(r.len() as u64, BATCH);
            }
        })
    };
    // A reader never sees part of a batch.
    let mut observed = HashSet::new();
    loop {
        let finished = writer.is_finished();
        let n = counts(&store)
            .await
            .get(&TimerState::Pending)
            .copied()
            .unwrap_or(0);
        assert_eq!(n % BATCH, 0, "saw {n} pending: part of a batch");
        let due = store
            .load_due(&all_shards(), None, i64::MAX, usize::MAX)
            .await
            .unwrap();
        assert_eq!(due.len() as u64 % BATCH, 0, "load_due saw part of a batch");
        observed.insert(n);
        if finished {
            break;
        }
        tokio::task::yield_now().await;
    }
    writer.await.expect("writer");
    assert!(observed.contains(&(BATCH * BATCHES)));
}
