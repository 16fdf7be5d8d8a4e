//! A timer's whole path through one node, driven pass by pass on a manual
//! clock: loader, wheel driver, fetcher, channel worker, completer. The
//! design note (`docs/architecture.md`) walks the same path.

use std::sync::Arc;

use herald_channels::SendOutcome;
use herald_core::TimerState;
use tokio::sync::mpsc;

use crate::EngineConfig;
use crate::channel_worker::{ChannelWorker, Turn};
use crate::completer::Completer;
use crate::driver::Driver;
use crate::fetcher::{FetchPass, Fetcher};
use crate::loader::{LoadPass, Loader, Rescan};
use crate::testkit::{CHANNEL, Rig, T0};

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
