//! Cluster membership, shard leases and their epochs, fencing, named leases.

use herald_core::TimerState;

use super::fixtures::*;
use super::support::*;
use crate::{Applied, CompletionOutcome, Fence, Holder};

/// Node `node` in its first incarnation.
fn holder(node: &str) -> Holder {
    Holder::new(node, 1)
}

fn owners(leases: &[crate::ShardLease]) -> Vec<(u16, Option<String>, i64)> {
    leases
        .iter()
        .map(|l| (l.shard, l.owner.clone(), l.epoch))
        .collect()
}

pub async fn heartbeat_lists_live_nodes(store: S) {
    let live = store.heartbeat(&holder("a"), 1_000, 100).await.unwrap();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].node_id, "a");
    assert_eq!(live[0].expires_at, 1_100);
    assert_eq!(live[0].started_at, 1_000);
    store.heartbeat(&holder("b"), 1_050, 100).await.unwrap();
    let live = store.heartbeat(&holder("a"), 1_120, 100).await.unwrap();
    let ids: Vec<&str> = live.iter().map(|n| n.node_id.as_str()).collect();
    assert_eq!(ids, ["a", "b"]);
    // A beat moves the expiry, not the start.
    assert_eq!((live[0].expires_at, live[0].started_at), (1_220, 1_000));
    // b stopped beating at 1_050 and expired at 1_150.
    let live = store.heartbeat(&holder("a"), 1_160, 100).await.unwrap();
    let ids: Vec<&str> = live.iter().map(|n| n.node_id.as_str()).collect();
    assert_eq!(ids, ["a"]);
}

pub async fn leave_releases_the_nodes_shards(store: S) {
    store.heartbeat(&holder("a"), 0, 1_000).await.unwrap();
    store.heartbeat(&holder("b"), 0, 1_000).await.unwrap();
    let held = store
        .acquire_shards(&holder("a"), &[1, 2], 0, 1_000)
        .await
        .unwrap();
    assert_eq!(held.len(), 2);
    store.leave(&holder("a")).await.unwrap();
    let live = store.heartbeat(&holder("b"), 10, 1_000).await.unwrap();
    assert_eq!(live.len(), 1);
    let leases = store.shard_leases().await.unwrap();
    assert_eq!(owners(&leases), vec![(1, None, 2), (2, None, 2)]);
    // Free now, long before the old lease would have expired.
    let took = store
        .acquire_shards(&holder("b"), &[1, 2], 20, 1_000)
        .await
        .unwrap();
    assert_eq!(
        owners(&took),
        vec![(1, Some("b".into()), 3), (2, Some("b".into()), 3)]
    );
}

pub async fn shards_change_hands_only_when_free_or_expired(store: S) {
    let a = store
        .acquire_shards(&holder("a"), &[0, 1, 2], 0, 100)
        .await
        .unwrap();
    assert_eq!(
        owners(&a),
        vec![
            (0, Some("a".into()), 1),
            (1, Some("a".into()), 1),
            (2, Some("a".into()), 1)
        ]
    );
    assert!(a.iter().all(|l| l.lease_until == 100));
    // b gets only the free one while a's leases run.
    let b = store
        .acquire_shards(&holder("b"), &[1, 2, 3], 50, 100)
        .await
        .unwrap();
    assert_eq!(owners(&b), vec![(3, Some("b".into()), 1)]);
    // After a's leases expire, b takes shard 1 and its epoch grows.
    let b = store
        .acquire_shards(&holder("b"), &[1], 100, 100)
        .await
        .unwrap();
    assert_eq!(owners(&b), vec![(1, Some("b".into()), 2)]);
    let all = store.shard_leases().await.unwrap();
    assert_eq!(
        owners(&all),
        vec![
            (0, Some("a".into()), 1),
            (1, Some("b".into()), 2),
            (2, Some("a".into()), 1),
            (3, Some("b".into()), 1)
        ]
    );
}

pub async fn renewing_keeps_the_epoch_and_a_lost_shard_is_not_renewed(store: S) {
    store
        .acquire_shards(&holder("a"), &[5, 6], 0, 100)
        .await
        .unwrap();
    // Acquiring one's own shard again is a renewal: same epoch, later expiry.
    let again = store
        .acquire_shards(&holder("a"), &[5], 50, 100)
        .await
        .unwrap();
    assert_eq!((again[0].epoch, again[0].lease_until), (1, 150));
    // Shard 6 expires at 100 and b takes it.
    store
        .acquire_shards(&holder("b"), &[6], 120, 100)
        .await
        .unwrap();
    let held = [Fence { shard: 5, epoch: 1 }, Fence { shard: 6, epoch: 1 }];
    let renewed = store
        .renew_shards(&holder("a"), &held, 130, 100)
        .await
        .unwrap();
    assert_eq!(owners(&renewed), vec![(5, Some("a".into()), 1)]);
    assert_eq!(renewed[0].lease_until, 230);
    let six = store
        .shard_leases()
        .await
        .unwrap()
        .into_iter()
        .find(|l| l.shard == 6)
        .unwrap();
    assert_eq!(
        (six.owner.as_deref(), six.epoch, six.lease_until),
        (Some("b"), 2, 220)
    );
}

pub async fn released_shards_are_free_with_a_new_epoch(store: S) {
    store
        .acquire_shards(&holder("a"), &[7, 8], 0, 10_000)
        .await
        .unwrap();
    // Releasing another node's shard does nothing.
    store.release_shards(&holder("b"), &[7]).await.unwrap();
    store.release_shards(&holder("a"), &[7]).await.unwrap();
    let leases = store.shard_leases().await.unwrap();
    assert_eq!(
        owners(&leases),
        vec![(7, None, 2), (8, Some("a".into()), 1)]
    );
    let b = store
        .acquire_shards(&holder("b"), &[7, 8], 10, 100)
        .await
        .unwrap();
    assert_eq!(owners(&b), vec![(7, Some("b".into()), 3)]);
}

pub async fn a_stale_epoch_is_fenced_off(store: S) {
    let t = insert_one(&store, timer(1_000)).await;
    let shard = t.shard;
    let a = store
        .acquire_shards(&holder("a"), &[shard], 0, 100)
        .await
        .unwrap();
    let old = Fence {
        shard,
        epoch: a[0].epoch,
    };
    // b takes the shard after a's lease expires: a's epoch is stale.
    let b = store
        .acquire_shards(&holder("b"), &[shard], 200, 100)
        .await
        .unwrap();
    let new = Fence {
        shard,
        epoch: b[0].epoch,
    };
    assert_eq!(new.epoch, old.epoch + 1);
    let mut late = completion(&t, 1, CompletionOutcome::Done, 250);
    late.fence = Some(old);
    assert_eq!(
        store.complete(vec![late]).await.unwrap(),
        vec![Applied::Fenced]
    );
    let still = store.get_timer(t.id).await.unwrap().unwrap();
    assert_eq!((still.state, still.attempts), (TimerState::Pending, 0));
    // The attempt itself is in the send log: it happened.
    assert_eq!(store.deliveries_for(t.id).await.unwrap().len(), 1);
    let mut current = completion(&t, 1, CompletionOutcome::Done, 260);
    current.fence = Some(new);
    assert_eq!(
        store.complete(vec![current]).await.unwrap(),
        vec![Applied::Yes]
    );
    let done = store.get_timer(t.id).await.unwrap().unwrap();
    assert_eq!(done.state, TimerState::Done);
    // A fence for a shard nobody ever leased is stale too.
    let u = insert_one(&store, timer(2_000)).await;
    let mut c = completion(&u, 1, CompletionOutcome::Done, 270);
    c.fence = Some(Fence {
        shard: 999,
        epoch: 1,
    });
    assert_eq!(
        store.complete(vec![c]).await.unwrap(),
        vec![Applied::Fenced]
    );
}

pub async fn named_leases_have_one_holder_at_a_time(store: S) {
    let a = store
        .acquire_lease("planner", &holder("a"), 0, 100)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((a.holder.as_str(), a.epoch, a.lease_until), ("a", 1, 100));
    assert!(
        store
            .acquire_lease("planner", &holder("b"), 50, 100)
            .await
            .unwrap()
            .is_none()
    );
    // a renews: same epoch.
    let a = store
        .acquire_lease("planner", &holder("a"), 60, 100)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((a.epoch, a.lease_until), (1, 160));
    // Expired: b takes it with a new epoch, and a cannot renew.
    let b = store
        .acquire_lease("planner", &holder("b"), 170, 100)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((b.holder.as_str(), b.epoch), ("b", 2));
    assert!(
        store
            .acquire_lease("planner", &holder("a"), 180, 100)
            .await
            .unwrap()
            .is_none()
    );
    // a releasing b's lease does nothing; b releasing frees it at once.
    store.release_lease("planner", &holder("a")).await.unwrap();
    assert!(
        store
            .acquire_lease("planner", &holder("a"), 190, 100)
            .await
            .unwrap()
            .is_none()
    );
    store.release_lease("planner", &holder("b")).await.unwrap();
    let a = store
        .acquire_lease("planner", &holder("a"), 200, 100)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(a.epoch, 3);
    // Other names are independent.
    assert!(
        store
            .acquire_lease("sweeper", &holder("b"), 200, 100)
            .await
            .unwrap()
            .is_some()
    );
}

/// A second process under the same node id (a restart beside a stalled old
/// one) is another holder: it waits for the leases to expire, takes them with
/// a new epoch, and the old incarnation can neither renew, release, leave nor
/// complete under them.
pub async fn a_new_incarnation_fences_off_the_old_one(store: S) {
    let (old, new) = (Holder::new("n1", 11), Holder::new("n1", 22));
    let t = insert_one(&store, timer(1_000)).await;
    let shard = t.shard;
    let live = store.heartbeat(&old, 0, 100).await.unwrap();
    assert_eq!((live[0].incarnation, live[0].started_at), (11, 0));
    let held = store.acquire_shards(&old, &[shard], 0, 100).await.unwrap();
    assert_eq!(held[0].incarnation, 11);
    let stale = Fence {
        shard,
        epoch: held[0].epoch,
    };
    let planner = store
        .acquire_lease("planner", &old, 0, 100)
        .await
        .unwrap()
        .unwrap();

    // The same node id is no pass while the old lease runs.
    assert!(
        store
            .acquire_shards(&new, &[shard], 50, 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .acquire_lease("planner", &new, 50, 100)
            .await
            .unwrap()
            .is_none()
    );
    // Expired: the new incarnation takes both with a bumped epoch.
    let took = store
        .acquire_shards(&new, &[shard], 150, 100)
        .await
        .unwrap();
    assert_eq!(
        (took[0].owner.as_deref(), took[0].incarnation, took[0].epoch),
        (Some("n1"), 22, stale.epoch + 1)
    );
    let lease = store
        .acquire_lease("planner", &new, 150, 100)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((lease.incarnation, lease.epoch), (22, planner.epoch + 1));
    let live = store.heartbeat(&new, 150, 100).await.unwrap();
    assert_eq!((live[0].incarnation, live[0].started_at), (22, 150));

    // The old incarnation wakes up: nothing it does touches the new one's hold.
    assert!(
        store
            .renew_shards(&old, &[stale], 160, 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .acquire_shards(&old, &[shard], 160, 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .acquire_lease("planner", &old, 160, 100)
            .await
            .unwrap()
            .is_none()
    );
    store.release_shards(&old, &[shard]).await.unwrap();
    store.release_lease("planner", &old).await.unwrap();
    store.leave(&old).await.unwrap();
    let mut late = completion(&t, 1, CompletionOutcome::Done, 170);
    late.fence = Some(stale);
    assert_eq!(
        store.complete(vec![late]).await.unwrap(),
        vec![Applied::Fenced]
    );
    let still = store.get_timer(t.id).await.unwrap().unwrap();
    assert_eq!(still.state, TimerState::Pending);
    let leases = store.shard_leases().await.unwrap();
    let now = leases.iter().find(|l| l.shard == shard).unwrap();
    assert_eq!(
        (now.incarnation, now.epoch, now.lease_until),
        (22, stale.epoch + 1, 250)
    );
    assert!(
        store
            .acquire_lease("planner", &new, 180, 100)
            .await
            .unwrap()
            .is_some()
    );
    let live = store.heartbeat(&new, 180, 100).await.unwrap();
    assert_eq!(live.len(), 1, "the old incarnation's leave kept the node");
    // The new incarnation renews as usual, and completes under its fence.
    let renewed = store
        .renew_shards(
            &new,
            &[Fence {
                shard,
                epoch: took[0].epoch,
            }],
            190,
            100,
        )
        .await
        .unwrap();
    assert_eq!(renewed.len(), 1);
    let mut ok = completion(&t, 1, CompletionOutcome::Done, 200);
    ok.fence = Some(Fence {
        shard,
        epoch: took[0].epoch,
    });
    assert_eq!(store.complete(vec![ok]).await.unwrap(), vec![Applied::Yes]);
}

/// Two handles on one database race for the same shards and the same named
/// lease: every shard ends with exactly one owner, and one holder wins.
pub async fn concurrent_claims_from_two_handles(a: S, b: S) {
    let shards: Vec<u16> = (0..64).collect();
    let (sa, sb) = (shards.clone(), shards.clone());
    let (a2, b2) = (a.clone(), b.clone());
    let ta = tokio::spawn(async move {
        a2.acquire_shards(&holder("node-a"), &sa, 1_000, 10_000)
            .await
    });
    let tb = tokio::spawn(async move {
        b2.acquire_shards(&holder("node-b"), &sb, 1_000, 10_000)
            .await
    });
    let got_a = ta.await.unwrap().unwrap();
    let got_b = tb.await.unwrap().unwrap();
    assert_eq!(got_a.len() + got_b.len(), 64, "each shard is claimed once");
    let mut seen: Vec<u16> = got_a.iter().chain(got_b.iter()).map(|l| l.shard).collect();
    seen.sort_unstable();
    assert_eq!(seen, shards);
    let leases = a.shard_leases().await.unwrap();
    assert_eq!(leases.len(), 64);
    for l in &leases {
        let by_a = got_a.iter().any(|g| g.shard == l.shard);
        assert_eq!(
            l.owner.as_deref(),
            Some(if by_a { "node-a" } else { "node-b" })
        );
        assert_eq!(l.epoch, 1);
    }
    let (a3, b3) = (a.clone(), b.clone());
    let la = tokio::spawn(async move {
        a3.acquire_lease("sweeper", &holder("node-a"), 1_000, 10_000)
            .await
    });
    let lb = tokio::spawn(async move {
        b3.acquire_lease("sweeper", &holder("node-b"), 1_000, 10_000)
            .await
    });
    let (la, lb) = (la.await.unwrap().unwrap(), lb.await.unwrap().unwrap());
    assert!(
        la.is_some() ^ lb.is_some(),
        "exactly one holder: {la:?} {lb:?}"
    );
}
