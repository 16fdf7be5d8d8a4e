//! A property test over the in-flight accounting, through the real paths:
//! the fetcher, a channel worker and the completer, driven pass by pass on a
//! manual clock over random mixes of plain timers, digests, merged
//! reminders sent as copies to several devices, retries, cancellations,
//! duplicate wheel entries, lost shards and a stop. Whatever the mix, no
//! more permits are ever free than the bound, and once everything settles
//! every permit is back and the flight set is empty.

use herald_channels::{InDoubt, SendOutcome};
use herald_core::{DEFAULT_TENANT, TimerId};
use herald_store::WriteOp;
use proptest::prelude::*;
use tokio::sync::mpsc;

use crate::channels::worker::{ChannelWorker, Turn};
use crate::config::EngineConfig;
use crate::testkit::{CHANNEL, Rig, SHARDS, T0};
use crate::timers::completer::Completer;
use crate::timers::driver::Driver;
use crate::timers::fetcher::Fetcher;

/// What the store holds before the first fetch.
#[derive(Debug, Clone)]
struct Workload {
    plain: usize,
    /// Timers per digest, one digest per entry (each its own recipient).
    digests: Vec<usize>,
    /// Reminders per user, one user per entry; merged within the window.
    reminders: Vec<usize>,
    /// App devices of each reminder user: a delivery goes as this many copies.
    devices: usize,
}

/// One pass of one loop, or something that happens to the timers meanwhile.
#[derive(Debug, Clone)]
enum Step {
    Fetch,
    Send,
    Complete,
    /// The wheel hands over what is due after the clock moved on.
    Tick(i64),
    /// The timer at this index (modulo their number) is cancelled.
    Cancel(usize),
    /// Its wheel entry shows up again (a duplicate, maybe while in flight).
    Duplicate(usize),
    /// This node loses a shard (a lease it no longer holds).
    LoseShard(u16),
}

fn outcome() -> impl Strategy<Value = SendOutcome> {
    prop_oneof![
        3 => Just(SendOutcome::Delivered { provider_msgid: None, status: Some(200) }),
        2 => Just(SendOutcome::Retryable {
            error: "try later".into(),
            status: Some(503),
            retry_after_ms: Some(50),
        }),
        1 => Just(SendOutcome::Permanent { error: "no".into(), status: Some(400) }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => Just(Step::Fetch),
        4 => Just(Step::Send),
        3 => Just(Step::Complete),
        1 => (0..3_000i64).prop_map(Step::Tick),
        1 => any::<usize>().prop_map(Step::Cancel),
        2 => any::<usize>().prop_map(Step::Duplicate),
        1 => (0..SHARDS * 3).prop_map(Step::LoseShard),
    ]
}

fn workload() -> impl Strategy<Value = Workload> {
    (
        0..6usize,
        prop::collection::vec(1..5usize, 0..4),
        prop::collection::vec(1..4usize, 0..3),
        1..4usize,
    )
        .prop_map(|(plain, digests, reminders, devices)| Workload {
            plain,
            digests,
            reminders,
            devices,
        })
}

/// Commits the workload, due now; returns every timer id.
async fn seed(rig: &Rig, w: &Workload) -> Vec<TimerId> {
    let mut ids = rig.insert(&vec![T0; w.plain]).await;
    for (d, &n) in w.digests.iter().enumerate() {
        let user = format!("d{d}");
        rig.put_subscriber(&user, r#"{"addresses":{"email":"d@example.com"}}"#)
            .await;
        for i in 0..n {
            let spec = r#"{"key":"k","window_ms":1}"#;
            let (id, _) = rig.insert_digest(&user, T0 - 1, spec, i as u32).await;
            ids.push(id);
        }
    }
    for (u, &n) in w.reminders.iter().enumerate() {
        let user = format!("u{u}");
        let tokens: Vec<String> = (0..w.devices).map(|i| format!("tok-{u}-{i}")).collect();
        let profile = serde_json::json!({"addresses": {"app": tokens}});
        rig.put_subscriber(&user, &profile.to_string()).await;
        for _ in 0..n {
            ids.push(rig.insert_reminder(&user, "app").await);
        }
    }
    ids
}

/// Runs one case; `Err` names the broken invariant.
async fn run(
    w: Workload,
    steps: Vec<Step>,
    script: Vec<SendOutcome>,
    max_inflight: usize,
    fetch_batch: usize,
    skip: bool,
    stop: bool,
) -> Result<(), TestCaseError> {
    let cfg = EngineConfig {
        max_inflight,
        fetch_batch,
        // Leases outlast every retry the settling waits for.
        lease_ms: 100_000_000,
        ..Default::default()
    };
    let in_doubt = if skip { InDoubt::Skip } else { InDoubt::Resend };
    let rig = Rig::with_in_doubt(cfg, in_doubt).await;
    let ids = seed(&rig, &w).await;
    rig.channel.script.lock().extend(script);
    let p = rig.pipe.clone();
    let (tx, rx) = mpsc::unbounded_channel();
    let fetcher = Fetcher::new(p.clone(), tx.clone());
    let worker = ChannelWorker::new(p.clone(), p.channels[CHANNEL].clone(), tx, 0);
    let mut completer = Completer::new(p.clone(), rx);
    let mut driver = Driver::new(p.clone());
    for &id in &ids {
        p.ready.push(rig.due(id).await);
    }
    let max = p.flight.max();
    let check = |when: &str| -> Result<(), TestCaseError> {
        prop_assert!(
            p.flight.available() <= max,
            "{when}: {} permits free of {max}",
            p.flight.available()
        );
        Ok(())
    };
    for s in steps {
        match s {
            Step::Fetch => {
                fetcher.run_once().await;
                fetcher.settled().await;
            }
            Step::Send => {
                worker.run_once().await;
            }
            Step::Complete => {
                completer.run_once().await.expect("recorded");
            }
            Step::Tick(ms) => {
                rig.clock.advance(ms);
                driver.run_once();
            }
            Step::Cancel(i) if !ids.is_empty() => {
                let id = ids[i % ids.len()];
                let op = WriteOp::CancelTimer {
                    tenant: DEFAULT_TENANT,
                    id,
                    at: T0,
                };
                p.store.apply(vec![op]).await.expect("cancel");
            }
            Step::Duplicate(i) if !ids.is_empty() => {
                p.ready.push(rig.due(ids[i % ids.len()]).await);
            }
            Step::LoseShard(s) if s < SHARDS => p.ownership.drop_shards([s]),
            _ => {}
        }
        check(&format!("{s:?}"))?;
    }
    if stop {
        // A shutdown: the fetcher lets go what it took, the worker what is
        // queued, the completer records what was sent.
        p.stop.stop();
        fetcher.run_once().await;
        fetcher.settled().await;
        ChannelWorker::new(
            p.clone(),
            p.channels[CHANNEL].clone(),
            mpsc::unbounded_channel().0,
            0,
        )
        .run()
        .await;
        while completer.run_once().await.expect("recorded") > 0 {}
        check("stopped")?;
    } else {
        // Settle: every retry comes due, every queued job goes out.
        for _ in 0..200 {
            rig.clock.advance(60_000);
            driver.run_once();
            fetcher.run_once().await;
            fetcher.settled().await;
            while worker.run_once().await == Turn::Sent {
                check("settling")?;
            }
            while completer.run_once().await.expect("recorded") > 0 {}
            check("settling")?;
            let idle =
                p.ready.len() == 0 && p.schedule.len() == 0 && p.channels[CHANNEL].queue.len() == 0;
            if idle && p.flight.len() == 0 {
                break;
            }
        }
    }
    prop_assert_eq!(p.flight.len(), 0, "timers left in the flight set");
    prop_assert_eq!(p.flight.available(), max, "permits not given back");
    prop_assert_eq!(p.flight.in_hand(), 0, "deliveries left in hand");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_permit_taken_comes_back_once(
        w in workload(),
        steps in prop::collection::vec(step(), 0..40),
        script in prop::collection::vec(outcome(), 0..12),
        max_inflight in 2..12usize,
        fetch_batch in 1..8usize,
        skip in any::<bool>(),
        stop in prop::bool::weighted(0.2),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(run(w, steps, script, max_inflight, fetch_batch, skip, stop))?;
    }
}

/// The issue's case, pass by pass: digests of three timers each, fetched
/// whole, with room for fewer timers than they hold together. Before the
/// fix each left two permits behind and firing stopped.
#[tokio::test]
async fn digests_fetched_whole_give_every_permit_back() {
    let w = Workload {
        plain: 0,
        digests: vec![3; 8],
        reminders: vec![],
        devices: 1,
    };
    let steps = Vec::new();
    let r = run(w, steps, Vec::new(), 20, 1_000, false, false).await;
    assert!(r.is_ok(), "{r:?}");
}
