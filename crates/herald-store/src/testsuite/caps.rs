//! Frequency-cap counters: check-and-take per batch, sliding windows,
//! all-or-nothing per send, and two handles racing for one user's cap.

use herald_core::TenantId;
use herald_core::caps::CapCheck;

use super::fixtures::DEFAULT_TENANT;
use super::support::S;
use crate::{CapTake, CapVerdict};

const T0: i64 = 1_700_000_000_000;

fn check(cap: &str, user: &str, max: u32, window_ms: i64) -> CapCheck {
    CapCheck {
        cap: cap.into(),
        key: format!("{cap}\u{1f}{user}"),
        max,
        window_ms,
        defer: false,
    }
}

fn take(tenant: TenantId, checks: Vec<CapCheck>) -> CapTake {
    CapTake { tenant, checks }
}

fn taken(v: &[CapVerdict]) -> usize {
    v.iter().filter(|v| **v == CapVerdict::Taken).count()
}

pub async fn caps_take_up_to_max_per_window(store: S) {
    let c = check("daily", "u1", 3, 10_000);
    let batch: Vec<CapTake> = (0..5)
        .map(|_| take(DEFAULT_TENANT, vec![c.clone()]))
        .collect();
    let v = store.take_caps(batch, T0).await.expect("take");
    assert_eq!(taken(&v), 3, "{v:?}");
    assert_eq!(
        v[3],
        CapVerdict::Full {
            cap: "daily".into(),
            free_at: c.bucket_of(T0) + 11_000,
            defer: false,
        }
    );
    // Another batch, later in the window: still full.
    let v = store
        .take_caps(vec![take(DEFAULT_TENANT, vec![c.clone()])], T0 + 5_000)
        .await
        .expect("take");
    assert!(matches!(v[0], CapVerdict::Full { .. }));
    // Another user, another tenant: their own counters.
    let v = store
        .take_caps(
            vec![
                take(DEFAULT_TENANT, vec![check("daily", "u2", 3, 10_000)]),
                take(TenantId(7), vec![c.clone()]),
            ],
            T0 + 5_000,
        )
        .await
        .expect("take");
    assert_eq!(taken(&v), 2);
    // Once the window moved past: room again, and the old buckets go.
    let later = c.bucket_of(T0) + 11_000;
    let v = store
        .take_caps(vec![take(DEFAULT_TENANT, vec![c.clone()]); 4], later)
        .await
        .expect("take");
    assert_eq!(taken(&v), 3);
}

pub async fn caps_a_refused_send_takes_no_slot(store: S) {
    let loose = check("loose", "u1", 10, 60_000);
    let tight = check("tight", "u1", 1, 60_000);
    let both = || take(DEFAULT_TENANT, vec![loose.clone(), tight.clone()]);
    let v = store
        .take_caps(vec![both(), both(), both()], T0)
        .await
        .expect("take");
    assert_eq!(v[0], CapVerdict::Taken);
    assert!(matches!(&v[1], CapVerdict::Full { cap, .. } if cap == "tight"));
    // The two refused sends left the loose cap with 9 free slots.
    let v = store
        .take_caps(vec![take(DEFAULT_TENANT, vec![loose.clone()]); 10], T0 + 1)
        .await
        .expect("take");
    assert_eq!(taken(&v), 9);
    // A send with no caps always goes.
    let v = store
        .take_caps(vec![take(DEFAULT_TENANT, vec![])], T0)
        .await
        .expect("take");
    assert_eq!(v, [CapVerdict::Taken]);
    assert!(store.take_caps(vec![], T0).await.expect("empty").is_empty());
}

/// Retention deletes counter buckets that stopped counting (keys never
/// taken again), and leaves live ones: a full counter stays full.
pub async fn caps_spent_counters_are_purged(store: S) {
    use crate::RetentionKind;
    let short = check("short", "gone", 1, 10_000);
    let long = check("long", "kept", 1, 3_600_000);
    let v = store
        .take_caps(
            vec![
                take(DEFAULT_TENANT, vec![short.clone()]),
                take(DEFAULT_TENANT, vec![long.clone()]),
            ],
            T0,
        )
        .await
        .expect("take");
    assert_eq!(taken(&v), 2);
    // Before the short bucket stops counting, nothing goes.
    let spent = short.counts_until(short.bucket_of(T0));
    let n = store
        .purge(RetentionKind::CapCounters, spent - 1, 100)
        .await
        .expect("purge");
    assert_eq!(n, 0);
    let n = store
        .purge(RetentionKind::CapCounters, spent + 1, 100)
        .await
        .expect("purge");
    assert_eq!(n, 1, "only the short window's bucket is spent");
    // The long window still counts its send.
    let v = store
        .take_caps(vec![take(DEFAULT_TENANT, vec![long.clone()])], spent + 2)
        .await
        .expect("take");
    assert!(matches!(v[0], CapVerdict::Full { .. }), "{v:?}");
}

pub async fn caps_hold_across_two_handles(a: S, b: S) {
    let c = check("race", "u1", 5, 3_600_000);
    let mut tasks = Vec::new();
    for i in 0..8 {
        let s = if i % 2 == 0 { a.clone() } else { b.clone() };
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            s.take_caps(vec![take(DEFAULT_TENANT, vec![c]); 3], T0 + i)
                .await
                .expect("take")
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += taken(&t.await.expect("join"));
    }
    assert_eq!(total, 5, "no more than the cap between two handles");
}
