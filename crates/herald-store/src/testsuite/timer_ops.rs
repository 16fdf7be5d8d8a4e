//! Cases for timer search, dead letters, and the writes that change a timer
//! in place: patch, replace by key, retry (one, and by filter).

use herald_core::{TimerKind, TimerState};

use super::fixtures::*;
use super::support::*;
use crate::{
    CompletionOutcome, DueCursor, RetryFilter, SortOrder, TimerFilter, TimerPatch, TimerRecord,
    WriteOp, WriteResult,
};

async fn one(store: &S, op: WriteOp) -> WriteResult {
    store.apply(vec![op]).await.expect("apply").remove(0)
}

/// Finishes `t` with `outcome` on its first attempt.
async fn finish(store: &S, t: &TimerRecord, outcome: CompletionOutcome, error: &str) {
    let mut c = completion(t, t.attempts + 1, outcome, 50);
    c.error = Some(error.to_string());
    store.complete(vec![c]).await.expect("complete");
}

async fn search(store: &S, f: &TimerFilter) -> Vec<i64> {
    store
        .search_timers(DEFAULT_TENANT, f, None, 100, SortOrder::Asc)
        .await
        .expect("search")
        .iter()
        .map(|t| t.id)
        .collect()
}

pub async fn search_filters_pages_and_orders(store: S) {
    let a = insert_one(&store, timer(100)).await;
    let b = insert_one(&store, keyed(100, "k-b")).await;
    let c = insert_one(
        &store,
        crate::NewTimer {
            recipient: "alice".into(),
            channel: "push".into(),
            kind: TimerKind::Reminder,
            ..timer(200)
        },
    )
    .await;
    let d = insert_one(&store, timer(300)).await;
    let theirs = insert_one(
        &store,
        crate::NewTimer {
            tenant: OTHER_TENANT,
            ..timer(100)
        },
    )
    .await;
    finish(&store, &d, CompletionOutcome::Dead, "HTTP 500").await;

    let all = TimerFilter::default();
    assert_eq!(search(&store, &all).await, vec![a.id, b.id, c.id, d.id]);
    let st = &store;
    let by = |f: TimerFilter| async move { search(st, &f).await };
    let state = |s| TimerFilter {
        state: Some(s),
        ..TimerFilter::default()
    };
    assert_eq!(by(state(TimerState::Dead)).await, vec![d.id]);
    assert_eq!(by(state(TimerState::Pending)).await, vec![a.id, b.id, c.id]);
    let f = TimerFilter {
        recipient: Some("alice".into()),
        ..TimerFilter::default()
    };
    assert_eq!(by(f).await, vec![c.id]);
    let f = TimerFilter {
        channel: Some("push".into()),
        kind: Some(TimerKind::Reminder),
        ..TimerFilter::default()
    };
    assert_eq!(by(f).await, vec![c.id]);
    let f = TimerFilter {
        idempotency_key: Some("k-b".into()),
        ..TimerFilter::default()
    };
    assert_eq!(by(f).await, vec![b.id]);
    let f = TimerFilter {
        due_after: Some(200),
        due_before: Some(300),
        ..TimerFilter::default()
    };
    assert_eq!(by(f).await, vec![c.id]);
    // The other tenant sees its own only.
    let theirs_found = store
        .search_timers(OTHER_TENANT, &all, None, 100, SortOrder::Asc)
        .await
        .expect("search");
    assert_eq!(theirs_found.len(), 1);
    assert_eq!(theirs_found[0].id, theirs.id);

    // Pages of one, through the millisecond two timers share, both ways.
    for (order, want) in [
        (SortOrder::Asc, vec![a.id, b.id, c.id, d.id]),
        (SortOrder::Desc, vec![d.id, c.id, b.id, a.id]),
    ] {
        let mut seen = Vec::new();
        let mut after: Option<DueCursor> = None;
        loop {
            let page = store
                .search_timers(DEFAULT_TENANT, &all, after, 1, order)
                .await
                .expect("search");
            let Some(last) = page.last() else { break };
            after = Some(last.cursor());
            seen.extend(page.iter().map(|t| t.id));
        }
        assert_eq!(seen, want, "{order:?}");
    }
}

pub async fn patch_changes_only_a_pending_timer(store: S) {
    let t = insert_one(&store, timer(100)).await;
    let patch = |id, due_at, message: Option<&str>| {
        WriteOp::PatchTimer(TimerPatch {
            tenant: DEFAULT_TENANT,
            id,
            due_at,
            message: message.map(str::to_string),
            priority: None,
            at: 60,
        })
    };
    let r = one(&store, patch(t.id, Some(500), None)).await;
    let WriteResult::Updated { timer, moved } = &r else {
        panic!("{r:?}")
    };
    assert!(*moved);
    assert_eq!((timer.due_at, timer.updated_at), (500, 60));
    assert_eq!(r.scheduled(), vec![timer.due_entry()]);
    let due = store
        .load_due(&all_shards(), None, i64::MAX, 10)
        .await
        .expect("load_due");
    assert_eq!(due.iter().map(|e| e.due_at).collect::<Vec<_>>(), vec![500]);

    let r = one(&store, patch(t.id, None, Some(r#"{"text":"new"}"#))).await;
    let WriteResult::Updated { timer, moved } = &r else {
        panic!("{r:?}")
    };
    assert!(!*moved && r.scheduled().is_empty());
    assert_eq!(
        (timer.message.as_str(), timer.due_at),
        (r#"{"text":"new"}"#, 500)
    );

    let theirs = WriteOp::PatchTimer(TimerPatch {
        tenant: OTHER_TENANT,
        id: t.id,
        due_at: Some(1),
        message: None,
        priority: Some(1),
        at: 60,
    });
    assert_eq!(one(&store, theirs).await, WriteResult::NotFound);
    assert_eq!(
        one(&store, patch(9_999_999, Some(1), None)).await,
        WriteResult::NotFound
    );
    let now = get(&store, t.id).await;
    finish(&store, &now, CompletionOutcome::Done, "").await;
    let r = one(&store, patch(t.id, Some(1), None)).await;
    assert!(
        matches!(&r, WriteResult::WrongState(t) if t.state == TimerState::Done),
        "{r:?}"
    );
}

pub async fn replace_by_key_latest_wins_while_pending(store: S) {
    let first = crate::NewTimer {
        traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into()),
        routing: Some(r#"{"channel_type":"email","topic":"coupons"}"#.into()),
        ..keyed(100, "k")
    };
    let r = one(&store, WriteOp::ReplaceTimer(first.clone())).await;
    let made = created(&r);
    assert_eq!(made.traceparent, first.traceparent);
    let stored = get(&store, made.id).await;
    assert_eq!(stored.traceparent, first.traceparent);
    assert_eq!(stored.routing, first.routing, "routing is stored as given");
    let later = crate::NewTimer {
        message: r#"{"text":"latest"}"#.into(),
        priority: 9,
        ..keyed(700, "k")
    };
    let r = one(&store, WriteOp::ReplaceTimer(later.clone())).await;
    let WriteResult::Updated { timer, moved } = &r else {
        panic!("{r:?}")
    };
    assert!(*moved);
    assert_eq!(timer.id, made.id);
    assert_eq!(
        (timer.due_at, timer.priority, timer.message.as_str()),
        (700, 9, r#"{"text":"latest"}"#)
    );
    // Without `replace`, the key still returns the stored timer.
    let r = one(&store, WriteOp::InsertTimer(keyed(900, "k"))).await;
    assert!(
        matches!(&r, WriteResult::Existing(t) if t.due_at == 700),
        "{r:?}"
    );
    finish(&store, timer, CompletionOutcome::Done, "").await;
    let r = one(&store, WriteOp::ReplaceTimer(later)).await;
    assert!(
        matches!(&r, WriteResult::Existing(t) if t.state == TimerState::Done),
        "{r:?}"
    );
}

pub async fn retry_starts_a_new_series_and_keeps_the_log(store: S) {
    let t = insert_one(&store, timer(100)).await;
    let retry = |id| WriteOp::RetryTimer {
        tenant: DEFAULT_TENANT,
        id,
        at: 5_000,
    };
    assert!(matches!(
        one(&store, retry(t.id)).await,
        WriteResult::WrongState(_)
    ));
    finish(
        &store,
        &t,
        CompletionOutcome::Retry { next_due_at: 150 },
        "503",
    )
    .await;
    let now = get(&store, t.id).await;
    finish(&store, &now, CompletionOutcome::Dead, "503").await;
    let r = one(&store, retry(t.id)).await;
    let WriteResult::Retried(back) = &r else {
        panic!("{r:?}")
    };
    assert_eq!(
        (back.state, back.due_at, back.attempts, back.attempt_base),
        (TimerState::Pending, 5_000, 2, 2)
    );
    assert_eq!(r.scheduled(), vec![back.due_entry()]);
    // The next attempt is the third; the old ones stay in the log.
    let c = completion(back, 3, CompletionOutcome::Done, 6_000);
    assert_eq!(
        store.complete(vec![c]).await.expect("complete"),
        vec![crate::Applied::Yes]
    );
    let log = store.deliveries_for(t.id).await.expect("deliveries");
    assert_eq!(
        log.iter().map(|d| d.attempt).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    let done = get(&store, t.id).await;
    assert_eq!(
        (done.state, done.attempts, done.attempt_base),
        (TimerState::Done, 3, 2)
    );
    assert!(matches!(
        one(&store, retry(t.id)).await,
        WriteResult::WrongState(_)
    ));
    let theirs = WriteOp::RetryTimer {
        tenant: OTHER_TENANT,
        id: t.id,
        at: 1,
    };
    assert_eq!(one(&store, theirs).await, WriteResult::NotFound);
}

pub async fn retry_by_filter_and_dead_letters(store: S) {
    let mut ids = Vec::new();
    for (i, (outcome, error, channel)) in [
        (CompletionOutcome::Dead, "HTTP 500: down", "webhook"),
        (CompletionOutcome::Dead, "HTTP 500: down", "webhook"),
        (CompletionOutcome::Dead, "HTTP 502", "webhook"),
        (CompletionOutcome::Failed, "HTTP 400", "webhook"),
        (CompletionOutcome::Dead, "HTTP 500: down", "push"),
    ]
    .into_iter()
    .enumerate()
    {
        let t = insert_one(
            &store,
            crate::NewTimer {
                channel: channel.into(),
                ..timer(100 + i as i64)
            },
        )
        .await;
        finish(&store, &t, outcome, error).await;
        ids.push(t.id);
    }
    let theirs = insert_one(
        &store,
        crate::NewTimer {
            tenant: OTHER_TENANT,
            ..timer(100)
        },
    )
    .await;
    finish(&store, &theirs, CompletionOutcome::Dead, "HTTP 500: down").await;

    let d = store
        .dead_letters(DEFAULT_TENANT, None)
        .await
        .expect("dead letters");
    assert_eq!((d.scanned, d.truncated), (5, false));
    let g = &d.groups[0];
    assert_eq!(
        (g.channel.as_str(), g.state, g.error.as_deref(), g.count),
        ("webhook", TimerState::Dead, Some("HTTP 500: down"), 2)
    );
    assert_eq!((g.first_due_at, g.last_due_at), (100, 101));
    assert_eq!(g.timer_ids, vec![ids[1], ids[0]]);
    assert_eq!(d.groups.len(), 4);
    let push = store
        .dead_letters(DEFAULT_TENANT, Some("push"))
        .await
        .expect("dead letters");
    assert_eq!(push.scanned, 1);

    let retry = |filter: RetryFilter, limit| WriteOp::RetryTimers {
        tenant: DEFAULT_TENANT,
        filter,
        at: 9_000,
        limit,
    };
    let f = RetryFilter {
        state: Some(TimerState::Dead),
        channel: Some("webhook".into()),
        error: Some("HTTP 50".into()),
        ..RetryFilter::default()
    };
    let r = one(&store, retry(f.clone(), 2)).await;
    let WriteResult::RetriedMany { timers, more } = &r else {
        panic!("{r:?}")
    };
    assert_eq!(
        timers.iter().map(|e| e.id).collect::<Vec<_>>(),
        vec![ids[0], ids[1]]
    );
    assert!(timers.iter().all(|e| e.due_at == 9_000));
    assert!(*more);
    let r = one(&store, retry(f, 2)).await;
    let WriteResult::RetriedMany { timers, more } = &r else {
        panic!("{r:?}")
    };
    assert_eq!(
        timers.iter().map(|e| e.id).collect::<Vec<_>>(),
        vec![ids[2]]
    );
    assert!(!*more);
    // No filter: both states, every channel; the other tenant's stays dead.
    let r = one(&store, retry(RetryFilter::default(), 100)).await;
    let WriteResult::RetriedMany { timers, more } = &r else {
        panic!("{r:?}")
    };
    let mut got: Vec<i64> = timers.iter().map(|e| e.id).collect();
    got.sort_unstable();
    assert_eq!((got, *more), (vec![ids[3], ids[4]], false));
    assert_eq!(get(&store, theirs.id).await.state, TimerState::Dead);
    let left = store
        .dead_letters(DEFAULT_TENANT, None)
        .await
        .expect("dead letters");
    assert_eq!((left.scanned, left.groups.len()), (0, 0));
}
