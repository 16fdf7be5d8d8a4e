//! The subscribe-grant ledger: recordings idempotent by key, one grant
//! spent per timer in the mark that fires it, none without one, and holds
//! ended by the send's answer or given back by an unmark.

use herald_core::TimerState;

use super::fixtures::*;
use super::support::*;
use crate::{
    Applied, CompletionOutcome, FiringMark, GrantEnd, GrantGiven, GrantRecording, GrantSettle,
    GrantUse, TimerRecord,
};

fn tap(user: &str, key: &str, template: &str, count: u32, long_term: bool) -> GrantRecording {
    GrantRecording {
        tenant: DEFAULT_TENANT,
        user_id: user.into(),
        channel: "mini".into(),
        key: key.into(),
        grants: vec![GrantGiven {
            template_id: template.into(),
            count,
            long_term,
        }],
        at: 10,
    }
}

fn needs(user: &str, template: &str) -> GrantUse {
    GrantUse {
        tenant: DEFAULT_TENANT,
        user_id: user.into(),
        channel: "mini".into(),
        template_id: template.into(),
    }
}

fn mark(t: &TimerRecord, at: i64, grant: GrantUse) -> FiringMark {
    FiringMark {
        timer_id: t.id,
        attempt: t.attempts + 1,
        fence: None,
        at,
        grant: Some(grant),
    }
}

/// (remaining, spent) of `user`'s grant of template `t`.
async fn left(store: &S, user: &str, t: &str) -> (i64, i64) {
    let all = store.list_grants(DEFAULT_TENANT, user).await.expect("list");
    all.iter()
        .find(|g| g.template_id == t)
        .map_or((0, 0), |g| (g.remaining, g.spent))
}

pub async fn recordings_add_up_and_a_repeated_key_changes_nothing(store: S) {
    let r = store
        .record_grants(tap("ann", "k1", "T1", 1, false))
        .await
        .unwrap();
    assert!(r.recorded);
    assert_eq!(r.grants.len(), 1);
    assert_eq!((r.grants[0].remaining, r.grants[0].granted), (1, 1));
    let again = store
        .record_grants(tap("ann", "k1", "T1", 1, false))
        .await
        .unwrap();
    assert!(!again.recorded);
    assert_eq!(again.grants[0].remaining, 1);
    store
        .record_grants(tap("ann", "k2", "T1", 2, false))
        .await
        .unwrap();
    store
        .record_grants(tap("ann", "k3", "T2", 0, true))
        .await
        .unwrap();
    // Another user's key is another key.
    store
        .record_grants(tap("bob", "k1", "T1", 1, false))
        .await
        .unwrap();
    let all = store.list_grants(DEFAULT_TENANT, "ann").await.unwrap();
    let got: Vec<(String, i64, bool)> = all
        .iter()
        .map(|g| (g.template_id.clone(), g.remaining, g.long_term))
        .collect();
    assert_eq!(got, [("T1".into(), 3, false), ("T2".into(), 0, true)]);
    assert!(
        store
            .list_grants(OTHER_TENANT, "ann")
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn a_mark_spends_one_grant_and_its_retries_none(store: S) {
    store
        .record_grants(tap("ann", "k1", "T1", 2, false))
        .await
        .unwrap();
    let t = insert_one(&store, timer(100)).await;
    let applied = store
        .mark_firing(vec![mark(&t, 150, needs("ann", "T1"))])
        .await
        .unwrap();
    assert_eq!(applied, [Applied::Yes]);
    assert_eq!(left(&store, "ann", "T1").await, (1, 1));
    // The attempt fails and is retried: the second mark finds the hold.
    let retry = CompletionOutcome::Retry { next_due_at: 200 };
    store
        .complete(vec![completion(&t, 1, retry, 160)])
        .await
        .unwrap();
    let t = get(&store, t.id).await;
    let applied = store
        .mark_firing(vec![mark(&t, 210, needs("ann", "T1"))])
        .await
        .unwrap();
    assert_eq!(applied, [Applied::Yes]);
    assert_eq!(left(&store, "ann", "T1").await, (1, 1));
    store
        .settle_grants(
            vec![GrantSettle {
                timer_id: t.id,
                end: GrantEnd::Spent,
            }],
            220,
        )
        .await
        .unwrap();
    assert_eq!(left(&store, "ann", "T1").await, (1, 1));
}

pub async fn without_a_grant_the_timer_is_not_marked(store: S) {
    store
        .record_grants(tap("ann", "k1", "T1", 1, false))
        .await
        .unwrap();
    let ts = insert_all(&store, [timer(100), timer(100), timer(100)]).await;
    let applied = store
        .mark_firing(vec![
            mark(&ts[0], 150, needs("ann", "T1")),
            mark(&ts[1], 150, needs("ann", "T1")),
            mark(&ts[2], 150, needs("nobody", "T1")),
        ])
        .await
        .unwrap();
    assert_eq!(applied, [Applied::Yes, Applied::NoGrant, Applied::NoGrant]);
    assert_eq!(get(&store, ts[0].id).await.state, TimerState::Firing);
    assert_eq!(get(&store, ts[1].id).await.state, TimerState::Pending);
    assert_eq!(get(&store, ts[2].id).await.state, TimerState::Pending);
    assert_eq!(left(&store, "ann", "T1").await, (0, 1));
}

pub async fn long_term_grants_need_no_count(store: S) {
    store
        .record_grants(tap("ann", "k1", "T9", 0, true))
        .await
        .unwrap();
    let ts = insert_all(&store, [timer(100), timer(100)]).await;
    let applied = store
        .mark_firing(
            ts.iter()
                .map(|t| mark(t, 150, needs("ann", "T9")))
                .collect(),
        )
        .await
        .unwrap();
    assert_eq!(applied, [Applied::Yes, Applied::Yes]);
    assert_eq!(left(&store, "ann", "T9").await, (0, 2));
}

pub async fn answers_end_holds_as_they_say(store: S) {
    store
        .record_grants(tap("ann", "k1", "T1", 3, false))
        .await
        .unwrap();
    let ts = insert_all(&store, [timer(100), timer(100)]).await;
    let marks = ts
        .iter()
        .map(|t| mark(t, 150, needs("ann", "T1")))
        .collect();
    assert_eq!(
        store.mark_firing(marks).await.unwrap(),
        [Applied::Yes, Applied::Yes]
    );
    assert_eq!(left(&store, "ann", "T1").await, (1, 2));
    // Refused for a reason of the provider's own: the grant comes back.
    store
        .settle_grants(
            vec![GrantSettle {
                timer_id: ts[0].id,
                end: GrantEnd::Returned,
            }],
            160,
        )
        .await
        .unwrap();
    assert_eq!(left(&store, "ann", "T1").await, (2, 1));
    // The provider says none is left: the ledger believes it.
    store
        .settle_grants(
            vec![GrantSettle {
                timer_id: ts[1].id,
                end: GrantEnd::NoneLeft,
            }],
            170,
        )
        .await
        .unwrap();
    assert_eq!(left(&store, "ann", "T1").await.0, 0);
    // A hold ends once: settling again changes nothing.
    store
        .settle_grants(
            vec![GrantSettle {
                timer_id: ts[0].id,
                end: GrantEnd::Returned,
            }],
            180,
        )
        .await
        .unwrap();
    assert_eq!(left(&store, "ann", "T1").await.0, 0);
}

pub async fn a_timer_put_back_unsent_gives_its_grant_back(store: S) {
    store
        .record_grants(tap("ann", "k1", "T1", 1, false))
        .await
        .unwrap();
    let t = insert_one(&store, timer(100)).await;
    assert_eq!(
        store
            .mark_firing(vec![mark(&t, 150, needs("ann", "T1"))])
            .await
            .unwrap(),
        [Applied::Yes]
    );
    assert_eq!(left(&store, "ann", "T1").await, (0, 1));
    assert_eq!(store.unmark_firing(vec![t.id], 160).await.unwrap(), 1);
    assert_eq!(left(&store, "ann", "T1").await, (1, 0));
    assert_eq!(get(&store, t.id).await.state, TimerState::Pending);
}

/// Two handles marking different timers of the same user at once: the
/// last grant goes to one of them.
pub async fn two_nodes_never_spend_the_last_grant_twice(a: S, b: S) {
    a.record_grants(tap("ann", "k1", "T1", 5, false))
        .await
        .unwrap();
    let ts = insert_all(&a, (0..20).map(|_| timer(100))).await;
    let (left_half, right_half) = ts.split_at(10);
    let marks = |half: &[TimerRecord]| -> Vec<FiringMark> {
        half.iter()
            .map(|t| mark(t, 150, needs("ann", "T1")))
            .collect()
    };
    let (x, y) = tokio::join!(
        a.mark_firing(marks(left_half)),
        b.mark_firing(marks(right_half))
    );
    let yes = x
        .unwrap()
        .into_iter()
        .chain(y.unwrap())
        .filter(|a| *a == Applied::Yes)
        .count();
    assert_eq!(yes, 5);
    assert_eq!(left(&a, "ann", "T1").await, (0, 5));
}
