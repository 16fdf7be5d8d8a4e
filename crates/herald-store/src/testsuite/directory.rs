//! The subscriber directory: writes create then replace and bump the version,
//! conditional writes hold only over the version they name, reads and pages
//! stay in their tenant, and two handles racing one conditional write leave
//! exactly one winner.

use herald_core::TenantId;

use super::fixtures::DEFAULT_TENANT;
use super::support::*;
use crate::{PutSubscriber, SubscriberRecord, WriteOp, WriteResult};

fn put(user: &str, profile: &str, if_version: Option<i64>, at: i64) -> WriteOp {
    WriteOp::PutSubscriber(PutSubscriber {
        tenant: DEFAULT_TENANT,
        user_id: user.into(),
        profile: profile.into(),
        if_version,
        at,
    })
}

async fn one(store: &S, op: WriteOp) -> WriteResult {
    let mut r = store.apply(vec![op]).await.expect("apply");
    assert_eq!(r.len(), 1);
    r.remove(0)
}

fn stored(r: WriteResult) -> (SubscriberRecord, bool) {
    match r {
        WriteResult::SubscriberPut {
            subscriber,
            created,
        } => (subscriber, created),
        other => panic!("expected SubscriberPut, got {other:?}"),
    }
}

pub async fn subscribers_are_created_replaced_listed_and_deleted(store: S) {
    let (a, created) = stored(one(&store, put("alice", r#"{"locale":"en"}"#, None, 10)).await);
    assert!(created);
    assert_eq!((a.version, a.created_at, a.updated_at), (1, 10, 10));
    let (a2, created) = stored(one(&store, put("alice", r#"{"locale":"fr"}"#, None, 20)).await);
    assert!(!created);
    assert_eq!((a2.version, a2.created_at, a2.updated_at), (2, 10, 20));
    assert_eq!(a2.profile, r#"{"locale":"fr"}"#);
    for u in ["carol", "bob"] {
        stored(one(&store, put(u, "{}", None, 30)).await);
    }
    // Another tenant's "dave" is not in this tenant's pages.
    one(
        &store,
        WriteOp::PutSubscriber(PutSubscriber {
            tenant: TenantId(7),
            user_id: "dave".into(),
            profile: "{}".into(),
            if_version: None,
            at: 30,
        }),
    )
    .await;

    let got = store
        .get_subscribers(
            DEFAULT_TENANT,
            &[
                "alice".into(),
                "nobody".into(),
                "alice".into(),
                "dave".into(),
            ],
        )
        .await
        .expect("get_subscribers");
    assert_eq!(got, vec![a2.clone()]);
    let page = |after: Option<&'static str>, limit| {
        let store = &store;
        async move {
            store
                .list_subscribers(DEFAULT_TENANT, after, limit)
                .await
                .expect("list_subscribers")
                .into_iter()
                .map(|s| s.user_id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(page(None, 10).await, ["alice", "bob", "carol"]);
    assert_eq!(page(None, 2).await, ["alice", "bob"]);
    assert_eq!(page(Some("bob"), 2).await, ["carol"]);
    assert!(page(Some("carol"), 2).await.is_empty());

    match one(
        &store,
        WriteOp::DeleteSubscriber {
            tenant: DEFAULT_TENANT,
            user_id: "alice".into(),
        },
    )
    .await
    {
        WriteResult::SubscriberDeleted(gone) => assert_eq!(gone, a2),
        other => panic!("expected SubscriberDeleted, got {other:?}"),
    }
    let again = one(
        &store,
        WriteOp::DeleteSubscriber {
            tenant: DEFAULT_TENANT,
            user_id: "alice".into(),
        },
    )
    .await;
    assert_eq!(again, WriteResult::NotFound);
    let other_tenant = one(
        &store,
        WriteOp::DeleteSubscriber {
            tenant: DEFAULT_TENANT,
            user_id: "dave".into(),
        },
    )
    .await;
    assert_eq!(other_tenant, WriteResult::NotFound);
    assert_eq!(page(None, 10).await, ["bob", "carol"]);
}

pub async fn conditional_writes_hold_only_over_their_version(store: S) {
    // "Only if absent" creates once.
    let (v1, _) = stored(one(&store, put("u", r#"{"a":1}"#, Some(0), 1)).await);
    match one(&store, put("u", r#"{"a":2}"#, Some(0), 2)).await {
        WriteResult::VersionConflict { current } => assert_eq!(current, Some(v1.clone())),
        other => panic!("expected VersionConflict, got {other:?}"),
    }
    let (v2, _) = stored(one(&store, put("u", r#"{"a":3}"#, Some(1), 3)).await);
    assert_eq!(v2.version, 2);
    // A write over a version that has moved on changes nothing.
    assert!(matches!(
        one(&store, put("u", r#"{"a":4}"#, Some(1), 4)).await,
        WriteResult::VersionConflict { .. }
    ));
    // Over a user that is not there.
    assert_eq!(
        one(&store, put("ghost", "{}", Some(3), 5)).await,
        WriteResult::VersionConflict { current: None }
    );
    let got = store
        .get_subscribers(DEFAULT_TENANT, &["u".into(), "ghost".into()])
        .await
        .expect("read");
    assert_eq!(got, vec![v2]);
}

/// Two handles each read version 1 and write over it at once: one wins, the
/// other sees a conflict, and the stored entry is the winner's.
pub async fn racing_conditional_writes_have_one_winner(a: S, b: S) {
    for round in 0..5 {
        let user = format!("racer-{round}");
        stored(one(&a, put(&user, "{}", None, 1)).await);
        let (a2, b2) = (a.clone(), b.clone());
        let (ua, ub) = (user.clone(), user.clone());
        let ta =
            tokio::spawn(
                async move { a2.apply(vec![put(&ua, r#"{"by":"a"}"#, Some(1), 2)]).await },
            );
        let tb =
            tokio::spawn(
                async move { b2.apply(vec![put(&ub, r#"{"by":"b"}"#, Some(1), 2)]).await },
            );
        let ra = ta.await.expect("join").expect("apply a").remove(0);
        let rb = tb.await.expect("join").expect("apply b").remove(0);
        let winners: Vec<&str> = [(&ra, "a"), (&rb, "b")]
            .iter()
            .filter(|(r, _)| matches!(r, WriteResult::SubscriberPut { .. }))
            .map(|(_, who)| *who)
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {ra:?} / {rb:?}");
        let got = a
            .get_subscribers(DEFAULT_TENANT, std::slice::from_ref(&user))
            .await
            .expect("read");
        assert_eq!(got[0].version, 2);
        assert_eq!(got[0].profile, format!(r#"{{"by":"{}"}}"#, winners[0]));
    }
}

/// The store's settings: absent until written, then replaced in place; the
/// shard count lives beside them untouched.
pub async fn meta_settings_are_read_and_replaced(store: S) {
    let shards = store.init_shards(16).await.expect("shards");
    assert_eq!(store.get_meta("reminder_leads").await.expect("read"), None);
    store
        .put_meta("reminder_leads", "5,10")
        .await
        .expect("write");
    store
        .put_meta("reminder_leads", "5,10,0")
        .await
        .expect("replace");
    assert_eq!(
        store.get_meta("reminder_leads").await.expect("read"),
        Some("5,10,0".to_string())
    );
    assert_eq!(store.init_shards(99).await.expect("shards"), shards);
}
