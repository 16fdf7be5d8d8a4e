//! A timer's whole path through one node, driven pass by pass on a manual
//! clock: loader, wheel driver, fetcher, channel worker, completer. The
//! design note (`docs/architecture.md`) walks the same path.

use std::sync::Arc;

use herald_channels::InDoubt;
use herald_channels::SendOutcome;
use herald_core::{Clock, TimerState};
use tokio::sync::mpsc;

use crate::channels::worker::{ChannelWorker, Turn};
use crate::config::EngineConfig;
use crate::testkit::{CHANNEL, Rig, T0};
use crate::timers::completer::Completer;
use crate::timers::driver::Driver;
use crate::timers::fetcher::{FetchPass, Fetcher};
use crate::timers::loader::{LoadPass, Loader, Rescan};

#[tokio::test]
async fn a_timer_fires_on_time_retries_and_ends_done() {
    // Leases outlast the test: no membership round renews them here.
    let rig = Rig::new(EngineConfig {
        lease_ms: 600_000,
        ..Default::default()
    })
    .await;
    let id = rig.insert(&[T0 + 5_000]).await[0];
    let p = rig.pipe.clone();
    let (tx, rx) = mpsc::unbounded_channel();
    let mut loader = Loader::new(p.clone(), false, Arc::new(Rescan::default()));
    let mut driver = Driver::new(p.clone());
    let fetcher = Fetcher::new(p.clone(), tx.clone());
    let worker = ChannelWorker::new(p.clone(), p.channels[CHANNEL].clone(), tx, 0);
    let mut completer = Completer::new(p.clone(), rx);
    rig.channel.script.lock().push_back(SendOutcome::Retryable {
        error: "try later".into(),
        status: Some(503),
        retry_after_ms: Some(3_000),
    });

    assert_eq!(loader.run_once().await, LoadPass::CaughtUp);
    driver.run_once();
    assert_eq!(fetcher.run_once().await, FetchPass::Idle, "not due yet");

    // Due: the first attempt fails and the timer goes back into the wheel.
    rig.clock.set(T0 + 5_000);
    driver.run_once();
    assert_eq!(fetcher.run_once().await, FetchPass::Routed);
    fetcher.settled().await;
    assert_eq!(worker.run_once().await, Turn::Sent);
    assert_eq!(completer.run_once().await.unwrap(), 1);
    let row = rig.timer(id).await;
    assert_eq!((row.state, row.attempts), (TimerState::Pending, 1));
    assert!(row.due_at >= T0 + 8_000);

    // Not before the retry is due; then it is delivered and recorded.
    driver.run_once();
    assert_eq!(fetcher.run_once().await, FetchPass::Idle);
    rig.clock.set(row.due_at);
    driver.run_once();
    assert_eq!(fetcher.run_once().await, FetchPass::Routed);
    fetcher.settled().await;
    assert_eq!(worker.run_once().await, Turn::Sent);
    assert_eq!(completer.run_once().await.unwrap(), 1);
    assert_eq!(rig.state(id).await, TimerState::Done);
    let attempts: Vec<(u32, i64)> = rig
        .channel
        .sent
        .lock()
        .iter()
        .map(|d| (d.attempt, d.fired_at))
        .collect();
    assert_eq!(attempts, [(1, T0 + 5_000), (2, row.due_at)]);
    let log = p.store.deliveries_for(id).await.unwrap();
    let outcomes: Vec<&str> = log.iter().map(|d| d.outcome.as_str()).collect();
    assert_eq!(outcomes, ["retry", "delivered"]);
    assert_eq!(p.flight.in_flight(), 0);
}

/// One due timer through fetcher and channel worker, stopped before the
/// completer: what the store holds while its outcome is unrecorded.
async fn state_while_unrecorded(in_doubt: InDoubt) -> (Rig, i64, TimerState) {
    let rig = Rig::with_in_doubt(
        EngineConfig {
            lease_ms: 600_000,
            ..Default::default()
        },
        in_doubt,
    )
    .await;
    let id = rig.insert(&[T0]).await[0];
    let p = rig.pipe.clone();
    let (tx, _rx) = mpsc::unbounded_channel();
    rig.pipe.ready.push(rig.due(id).await);
    let fetcher = Fetcher::new(p.clone(), tx.clone());
    let worker = ChannelWorker::new(p.clone(), p.channels[CHANNEL].clone(), tx, 0);
    assert_eq!(fetcher.run_once().await, FetchPass::Routed);
    fetcher.settled().await;
    assert_eq!(worker.run_once().await, Turn::Sent);
    assert_eq!(rig.channel.sent.lock().len(), 1);
    let state = rig.state(id).await;
    (rig, id, state)
}

#[tokio::test]
async fn a_resend_channel_writes_no_mark_before_the_send() {
    let (_rig, _id, state) = state_while_unrecorded(InDoubt::Resend).await;
    assert_eq!(state, TimerState::Pending, "firing costs no store write");
}

#[tokio::test]
async fn a_skip_channel_marks_the_timer_firing_and_a_new_owner_ends_it_in_doubt() {
    let (rig, id, state) = state_while_unrecorded(InDoubt::Skip).await;
    assert_eq!(state, TimerState::Firing, "marked before the send left");
    // The node dies before the completer records the outcome; another
    // takes the shard once the lease ran out, and resolves before loading.
    let p = &rig.pipe;
    let shard = rig.timer(id).await.shard;
    rig.clock.advance(600_001);
    let node2 = herald_store::Holder::new("node-2", 1);
    let leases = p
        .store
        .acquire_shards(&node2, &[shard], rig.clock.now_ms(), 60_000)
        .await
        .unwrap();
    let fences: Vec<herald_store::Fence> = leases
        .iter()
        .map(|l| herald_store::Fence {
            shard: l.shard,
            epoch: l.epoch,
        })
        .collect();
    let r = p
        .store
        .resolve_in_doubt(&fences, &[CHANNEL.to_string()], rig.clock.now_ms())
        .await
        .unwrap();
    assert_eq!((r.in_doubt, r.resent), (1, 0));
    assert_eq!(rig.state(id).await, TimerState::InDoubt);
    let log = p.store.deliveries_for(id).await.unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!((log[0].outcome.as_str(), log[0].attempt), ("in_doubt", 1));
}

#[tokio::test]
async fn a_skip_channels_outcome_is_recorded_over_its_mark() {
    let rig = Rig::with_in_doubt(
        EngineConfig {
            lease_ms: 600_000,
            ..Default::default()
        },
        InDoubt::Skip,
    )
    .await;
    let ids = rig.insert(&[T0, T0, T0]).await;
    let p = rig.pipe.clone();
    let (tx, rx) = mpsc::unbounded_channel();
    for &id in &ids {
        p.ready.push(rig.due(id).await);
    }
    let fetcher = Fetcher::new(p.clone(), tx.clone());
    let worker = ChannelWorker::new(p.clone(), p.channels[CHANNEL].clone(), tx, 0);
    let mut completer = Completer::new(p.clone(), rx);
    rig.channel.script.lock().push_back(SendOutcome::Retryable {
        error: "try later".into(),
        status: Some(503),
        retry_after_ms: Some(3_000),
    });
    assert_eq!(fetcher.run_once().await, FetchPass::Routed);
    fetcher.settled().await;
    for _ in 0..3 {
        assert_eq!(worker.run_once().await, Turn::Sent);
    }
    assert_eq!(completer.run_once().await.unwrap(), 3);
    let states: Vec<(TimerState, u32)> =
        futures_util::future::join_all(ids.iter().map(|&id| rig.timer(id)))
            .await
            .iter()
            .map(|t| (t.state, t.attempts))
            .collect();
    assert_eq!(
        states,
        [
            (TimerState::Pending, 1),
            (TimerState::Done, 1),
            (TimerState::Done, 1)
        ],
        "a retry goes back to pending, deliveries end done"
    );
    assert_eq!(p.flight.in_flight(), 0);
}

#[tokio::test]
async fn a_skip_channel_refuses_a_cancel_once_its_fetch_marked_the_timer() {
    let rig = Rig::with_in_doubt(EngineConfig::default(), InDoubt::Skip).await;
    let id = rig.insert(&[T0]).await[0];
    let p = rig.pipe.clone();
    let (tx, _rx) = mpsc::unbounded_channel();
    p.ready.push(rig.due(id).await);
    let fetcher = Fetcher::new(p.clone(), tx.clone());
    let worker = ChannelWorker::new(p.clone(), p.channels[CHANNEL].clone(), tx, 0);
    assert_eq!(fetcher.run_once().await, FetchPass::Routed);
    fetcher.settled().await;
    // Marked firing with its fetch: its send is under way, and a cancel
    // says so rather than reporting a cancel the send then ignores.
    let cancelled = p
        .store
        .apply(vec![herald_store::WriteOp::CancelTimer {
            tenant: herald_core::DEFAULT_TENANT,
            id,
            at: T0,
        }])
        .await
        .unwrap();
    assert!(
        matches!(cancelled[0], herald_store::WriteResult::NotCancellable(_)),
        "{cancelled:?}"
    );
    assert_eq!(worker.run_once().await, Turn::Sent);
    assert_eq!(rig.channel.sent.lock().len(), 1);
    assert_eq!(rig.state(id).await, TimerState::Firing);
}

#[tokio::test]
async fn a_skip_channel_marks_a_fetch_ahead_and_a_shutdown_puts_the_unsent_back() {
    let rig = Rig::with_in_doubt(
        EngineConfig {
            lease_ms: 600_000,
            ..Default::default()
        },
        InDoubt::Skip,
    )
    .await;
    let ids = rig.insert(&[T0, T0, T0]).await;
    let p = rig.pipe.clone();
    let (tx, _rx) = mpsc::unbounded_channel();
    for &id in &ids {
        p.ready.push(rig.due(id).await);
    }
    let fetcher = Fetcher::new(p.clone(), tx.clone());
    assert_eq!(fetcher.run_once().await, FetchPass::Routed);
    fetcher.settled().await;
    // All three marked in the fetch's one write, before any sender took one.
    for &id in &ids {
        assert_eq!(rig.state(id).await, TimerState::Firing);
    }
    let worker = ChannelWorker::new(p.clone(), p.channels[CHANNEL].clone(), tx, 0);
    assert_eq!(worker.run_once().await, Turn::Sent);
    let sent: Vec<i64> = rig.channel.sent.lock().iter().map(|d| d.timer_id).collect();
    assert_eq!(sent.len(), 1);
    // A clean shutdown: the two never sent go back to pending, not in doubt.
    p.stop.stop();
    worker.run().await;
    for &id in &ids {
        let want = if id == sent[0] {
            TimerState::Firing
        } else {
            TimerState::Pending
        };
        assert_eq!(rig.state(id).await, want, "timer {id}");
    }
    assert_eq!(
        p.flight.in_flight(),
        1,
        "the sent one waits for its outcome"
    );
}
