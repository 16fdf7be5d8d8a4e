//! Digest timers: placing a new one in its open digest (fixed and sliding
//! windows, daily digests in the subscriber's zone), keys, and the fire-time
//! member probe.

use herald_core::digest::Digest;
use herald_core::timer::Routing;

use super::fixtures::*;
use super::support::*;
use crate::{DueEntry, MergeProbe, NewTimer, PutSubscriber, TimerRecord, WriteOp, WriteResult};

const T: i64 = 1_000_000;

fn spec(key: &str, window_ms: Option<i64>, max_delay_ms: Option<i64>) -> Digest {
    Digest {
        key: key.into(),
        window_ms,
        max_delay_ms,
        at_local: None,
        since: None,
    }
}

/// A timer to `user` on the webhook channel, due `due`, in digest `d`.
fn digest_timer(user: &str, due: i64, d: Digest) -> NewTimer {
    let routing = Routing {
        digest: Some(d),
        ..Routing::default()
    };
    NewTimer {
        recipient: user.into(),
        routing: routing.stored(),
        ..timer(due)
    }
}

async fn place(store: &S, t: NewTimer) -> (TimerRecord, Vec<DueEntry>) {
    let mut r = store
        .apply(vec![WriteOp::InsertDigest(t)])
        .await
        .expect("apply");
    match r.remove(0) {
        WriteResult::DigestCreated { timer, moved } => (timer, moved),
        other => panic!("expected DigestCreated, got {other:?}"),
    }
}

fn since(t: &TimerRecord) -> Option<i64> {
    Routing::parse(t.routing.as_deref()).digest?.since
}

pub async fn a_digest_holds_its_timers_until_its_close(store: S) {
    let w = || spec("k", Some(1_000), None);
    let mut closes = Vec::new();
    for i in 0..5 {
        let (t, moved) = place(&store, digest_timer("u", T + i * 100, w())).await;
        assert!(moved.is_empty(), "a fixed window does not move");
        assert_eq!(since(&t), Some(T));
        closes.push(get(&store, t.id).await.due_at);
    }
    assert_eq!(closes, vec![T + 1_000; 5]);
    // Another key, recipient or channel opens its own.
    let (other_key, _) = place(
        &store,
        digest_timer("u", T + 500, spec("j", Some(1_000), None)),
    )
    .await;
    assert_eq!(other_key.due_at, T + 1_500);
    let (other_user, _) = place(&store, digest_timer("v", T + 500, w())).await;
    assert_eq!(other_user.due_at, T + 1_500);
    let elsewhere = NewTimer {
        channel: "mail".into(),
        ..digest_timer("u", T + 500, w())
    };
    assert_eq!(place(&store, elsewhere).await.0.due_at, T + 1_500);
    // So does another topic: the directory decides on it for the whole digest.
    let mut topical = Routing {
        topic: Some("news".into()),
        digest: Some(w()),
        ..Routing::default()
    };
    let news = NewTimer {
        routing: topical.stored(),
        ..digest_timer("u", T + 500, w())
    };
    assert_eq!(place(&store, news).await.0.due_at, T + 1_500);
    topical.critical = true;
    let urgent = NewTimer {
        routing: topical.stored(),
        ..digest_timer("u", T + 600, w())
    };
    assert_eq!(place(&store, urgent).await.0.due_at, T + 1_600);
    // After the close: a new digest.
    let (late, _) = place(&store, digest_timer("u", T + 1_001, w())).await;
    assert_eq!((late.due_at, since(&late)), (T + 2_001, Some(T + 1_001)));
}

pub async fn a_sliding_digest_moves_its_members_up_to_max_delay(store: S) {
    let w = || spec("k", Some(1_000), Some(2_000));
    let (a, _) = place(&store, digest_timer("u", T, w())).await;
    assert_eq!(a.due_at, T + 1_000);
    let (b, moved) = place(&store, digest_timer("u", T + 500, w())).await;
    assert_eq!(b.due_at, T + 1_500);
    assert_eq!(
        moved.iter().map(|e| (e.id, e.due_at)).collect::<Vec<_>>(),
        vec![(a.id, T + 1_500)]
    );
    let (c, moved) = place(&store, digest_timer("u", T + 1_400, w())).await;
    assert_eq!(c.due_at, T + 2_000, "capped at since + max_delay_ms");
    assert_eq!(moved.len(), 2);
    let (d, moved) = place(&store, digest_timer("u", T + 1_900, w())).await;
    assert_eq!(d.due_at, T + 2_000);
    assert!(moved.is_empty());
    for t in [&a, &b, &c, &d] {
        let now = get(&store, t.id).await;
        assert_eq!((now.due_at, since(&now)), (T + 2_000, Some(T)));
    }
    // A member no longer pending is not moved (here: cancelled).
    let (e, _) = place(&store, digest_timer("u", T + 5_000, w())).await;
    cancel(&store, e.id, T).await;
    let (f, moved) = place(&store, digest_timer("u", T + 5_500, w())).await;
    assert_eq!(f.due_at, T + 6_500, "the cancelled one is no open digest");
    assert!(moved.is_empty());
}

pub async fn a_keyed_digest_timer_is_created_once(store: S) {
    let w = || spec("k", Some(1_000), Some(5_000));
    let keyed = NewTimer {
        idempotency_key: Some("once".into()),
        ..digest_timer("u", T, w())
    };
    let (first, _) = place(&store, keyed.clone()).await;
    let (_, _) = place(&store, digest_timer("u", T + 800, w())).await;
    let again = store
        .apply(vec![WriteOp::InsertDigest(NewTimer {
            due_at: T + 900,
            ..keyed
        })])
        .await
        .expect("apply");
    match &again[..] {
        [WriteResult::Existing(t)] => assert_eq!(t.id, first.id),
        other => panic!("expected Existing, got {other:?}"),
    }
    assert_eq!(
        get(&store, first.id).await.due_at,
        T + 1_800,
        "the repeat moved nothing"
    );
}

pub async fn a_daily_digest_closes_in_the_subscribers_zone(store: S) {
    let put = |user: &str, profile: &str| {
        WriteOp::PutSubscriber(PutSubscriber {
            tenant: DEFAULT_TENANT,
            user_id: user.into(),
            profile: profile.into(),
            if_version: None,
            at: 1,
        })
    };
    store
        .apply(vec![
            put("ny", r#"{"timezone":"America/New_York"}"#),
            put("nozone", "{}"),
        ])
        .await
        .expect("apply");
    let daily = || Digest {
        at_local: Some("09:00".into()),
        ..spec("daily", None, None)
    };
    let ms = |s: &str| herald_core::time::parse_rfc3339_ms(s).unwrap();
    // New York springs forward on 2026-03-08: 09:00 EDT is 13:00Z.
    let (a, _) = place(
        &store,
        digest_timer("ny", ms("2026-03-07T15:00:00Z"), daily()),
    )
    .await;
    assert_eq!(a.due_at, ms("2026-03-08T13:00:00Z"));
    let (b, _) = place(
        &store,
        digest_timer("ny", ms("2026-03-08T12:00:00Z"), daily()),
    )
    .await;
    assert_eq!(b.due_at, a.due_at, "joins the same day's digest");
    assert_eq!(since(&b), since(&a));
    for user in ["nozone", "unknown"] {
        let (t, _) = place(
            &store,
            digest_timer(user, ms("2026-03-07T15:00:00Z"), daily()),
        )
        .await;
        assert_eq!(t.due_at, ms("2026-03-08T09:00:00Z"), "{user}: UTC");
    }
}

pub async fn pending_digests_follow_recipient_channel_and_range(store: S) {
    let w = || spec("k", Some(1_000), None);
    let (a, _) = place(&store, digest_timer("u", T, w())).await;
    let (b, _) = place(&store, digest_timer("u", T + 2_000, w())).await;
    place(&store, digest_timer("v", T, w())).await;
    insert_one(
        &store,
        NewTimer {
            recipient: "u".into(),
            ..timer(T + 1_000)
        },
    )
    .await;
    let probe = |user: &str, from, until| MergeProbe {
        tenant: DEFAULT_TENANT,
        user_id: user.into(),
        channel: "webhook".into(),
        from,
        until,
    };
    assert!(store.pending_digests(&[]).await.unwrap().is_empty());
    let ids = |found: Vec<TimerRecord>| found.iter().map(|t| t.id).collect::<Vec<_>>();
    let found = store
        .pending_digests(&[probe("u", T, T + 5_000), probe("u", T, T + 1_000)])
        .await
        .unwrap();
    assert_eq!(
        ids(found),
        vec![a.id, b.id],
        "each once, plain timers left out"
    );
    let found = store
        .pending_digests(&[probe("u", T + 1_001, T + 2_999)])
        .await
        .unwrap();
    assert!(found.is_empty());
    let other = MergeProbe {
        tenant: OTHER_TENANT,
        ..probe("u", T, T + 5_000)
    };
    assert!(store.pending_digests(&[other]).await.unwrap().is_empty());
}

/// Two nodes creating into one digest at once: every timer is created once,
/// and each is due at a close no later than `max_delay_ms` holds it.
pub async fn concurrent_digest_creates_lose_nothing(a: S, b: S) {
    let w = || spec("k", Some(1_000), Some(3_000));
    let run = |store: S, base: i64| async move {
        let mut ids = Vec::new();
        for i in 0..15 {
            let due = T + base + i * 20;
            let (t, _) = place(&store, digest_timer("u", due, w())).await;
            ids.push((t.id, due));
        }
        ids
    };
    let (x, y) = tokio::join!(run(a.clone(), 0), run(b, 10));
    let all: Vec<(i64, i64)> = x.into_iter().chain(y).collect();
    let mut seen: Vec<i64> = all.iter().map(|(id, _)| *id).collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 30);
    for (id, due) in all {
        let t = get(&a, id).await;
        // Never before its due time, never past the longest hold.
        assert!(t.due_at >= due && t.due_at <= due + 3_000, "{t:?}");
    }
}
